// `mote embed`: texts as vectors, for on-device search. One embedding per text (-p TEXT, or each
// line of -f FILE / -f -), pooled and normalized the model's own way unless told otherwise,
// printed as JSON lines, CSV, one float per line or raw little-endian float32; with --query, the
// lines ranked by cosine similarity to the query instead.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cli_input.hpp"
#include "cli_model.hpp"
#include "cli_options.hpp"
#include "cli_terminal.hpp"
#include "commands.hpp"

namespace mote::cli {
namespace {

enum class Output { lines, json, csv, f32 };

struct EmbedOptions {
  std::string pool_name, output_name;
  bool normalize = false, no_normalize = false, bidirectional = false, json = false;
  mote_pool pool = MOTE_POOL_MEAN;
  Output output = Output::json;
};

// The texts: -p's one, or every line of -f's file ("-": stdin) without its line ending.
bool read_texts(const std::string &prompt, const std::string &file, std::vector<std::string> *texts,
                std::string *error) {
  if (file.empty()) {
    texts->push_back(prompt);
    return true;
  }
  std::string all;
  if (!read_prompt_file(file, &all, error)) return false;
  for (size_t begin = 0; begin < all.size();) {
    const size_t end = std::min(all.find('\n', begin), all.size());
    std::string line = all.substr(begin, end - begin);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    texts->push_back(std::move(line));
    begin = end + 1;
  }
  return true;
}

// Tokens of one text, truncated to limit tokens (keeping a final end token such as BERT's [SEP]
// as Hugging Face's truncation does); *truncated says whether it was.
bool embed_tokens(const mote_model &model, const mote_model_info &info, const std::string &text, size_t limit,
                  std::vector<int32_t> *tokens, bool *truncated, std::string *error) {
  if (!tokenize(model, text, tokens, error)) return false;
  *truncated = tokens->size() > limit;
  if (*truncated) {
    const int32_t last = tokens->back();
    tokens->resize(limit);
    if (info.eos_id >= 0 && last == info.eos_id) tokens->back() = last;
  }
  return true;
}

void print_vector(const float *v, size_t n, Output output) {
  if (output == Output::f32) {  // the host's floats: little-endian on every host mote runs on
    std::fwrite(v, sizeof(float), n, stdout);
    return;
  }
  const char *separator = output == Output::lines ? "\n" : output == Output::csv ? "," : ", ";
  if (output == Output::json) std::fputc('[', stdout);
  for (size_t i = 0; i < n; ++i) {
    std::printf("%s%.9g", i == 0 || output == Output::lines ? "" : separator, static_cast<double>(v[i]));
    if (output == Output::lines) std::fputc('\n', stdout);
  }
  if (output == Output::json) std::fputc(']', stdout);
  if (output != Output::lines) std::fputc('\n', stdout);
}

double cosine(const float *a, const float *b, size_t n) {
  double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return aa > 0 && bb > 0 ? dot / std::sqrt(aa * bb) : 0.0;
}

bool parse_embed_options(const mote_model_info &info, EmbedOptions *o, std::string *error) {
  o->pool = static_cast<mote_pool>(info.pooling);  // the model's own unless --pool
  const struct {
    const char *name;
    mote_pool pool;
  } pools[] = {{"mean", MOTE_POOL_MEAN}, {"last", MOTE_POOL_LAST}, {"cls", MOTE_POOL_CLS}};
  bool pool_known = o->pool_name.empty();
  for (const auto &p : pools) {
    if (o->pool_name == p.name) {
      o->pool = p.pool;
      pool_known = true;
    }
  }
  if (!pool_known) {
    *error = "--pool must be mean, last or cls";
    return false;
  }
  if (o->normalize && o->no_normalize) {
    *error = "--normalize and --no-normalize contradict each other";
    return false;
  }
  if (!o->normalize && !o->no_normalize) o->normalize = info.normalize_embeddings != 0;
  const struct {
    const char *name;
    Output output;
  } outputs[] = {{"json", Output::json}, {"csv", Output::csv}, {"f32", Output::f32}, {"lines", Output::lines}};
  if (o->json) o->output_name = o->output_name.empty() ? "json" : o->output_name;
  bool output_known = o->output_name.empty();
  for (const auto &out : outputs) {
    if (o->output_name == out.name) {
      o->output = out.output;
      output_known = true;
    }
  }
  if (!output_known || (o->json && o->output != Output::json)) {
    *error = "-o must be json, csv, f32 or lines (--json is -o json)";
    return false;
  }
  return true;
}

}  // namespace

int command_embed(int argc, char **argv) {
  std::string model_path, prompt, file, query;
  bool has_prompt = false;
  EmbedOptions o;
  uint32_t threads = 1, top = 10;
  CommandHelp command{
      "embed",
      "-m MODEL (-p TEXT | -f FILE) [OPTIONS]",
      "Print one embedding per text: -p's, or each line of FILE (- for stdin). Pooling and\n"
      "normalization are the model's own (an embedder's file says; mean and none for a decoder)\n"
      "unless --pool / --normalize / --no-normalize say otherwise. Output: JSON lines (the default\n"
      "with -f), CSV, raw little-endian float32, or one float per line (the default with -p).\n"
      "--query Q ranks the lines of -f by cosine similarity to Q instead (nomic-embed-text wants\n"
      "'search_query: ' before a query and 'search_document: ' before each document).",
      {
          {"-m|--model", Option::kString, &model_path, "FILE", "the model"},
          {"-p|--prompt", Option::kString, &prompt, "TEXT", "the text (may be empty)", &has_prompt},
          {"-f|--file", Option::kString, &file, "FILE", "one text per line (- for stdin)"},
          {"-o|--output", Option::kString, &o.output_name, "FORMAT", "json, csv, f32 or lines"},
          {"--json", Option::kSwitch, &o.json, nullptr, "-o json"},
          {"--pool", Option::kString, &o.pool_name, "KIND", "mean, last or cls (default: the model's)"},
          {"--normalize", Option::kSwitch, &o.normalize, nullptr, "L2-normalize each vector"},
          {"--no-normalize", Option::kSwitch, &o.no_normalize, nullptr, "do not, even where the model does"},
          {"--bidirectional", Option::kSwitch, &o.bidirectional, nullptr,
           "drop a decoder's causal mask (an encoder never has one)"},
          {"--query", Option::kString, &query, "TEXT", "rank the lines of -f by similarity to TEXT"},
          {"--top", Option::kU32, &top, "N", "with --query: print the N most similar lines (0: all)"},
          {"-t|--threads", Option::kU32, &threads, "N", "threads"},
      }};
  std::vector<std::string> positional;
  const int parsed = parse_command(command, argc, argv, &positional);
  if (parsed != kParsed) return parsed;
  std::string error;
  if (!positional.empty()) return report("embed", "unexpected argument '" + positional[0] + "'", kExitUsage);
  if (model_path.empty()) return report("embed", "give the model with -m MODEL", kExitUsage);
  if (has_prompt == !file.empty())
    return report("embed", "give the text with -p TEXT or -f FILE (one of them)", kExitUsage);
  if (!query.empty() && file.empty()) return report("embed", "--query ranks the lines of -f FILE", kExitUsage);
  if (threads == 0 || threads > kMaxThreads)
    return report("embed", "-t must be 1.." + std::to_string(kMaxThreads), kExitUsage);
  if (file.empty() && o.output_name.empty() && !o.json) o.output_name = "lines";  // -p's output as before

  auto loaded = load_model(model_path, &error);
  if (!loaded) return report("embed", error, kExitError);
  mote_model_info info;
  mote_model_info_get(&loaded->model, &info);
  if (!parse_embed_options(info, &o, &error)) return report("embed", error, kExitUsage);
  std::vector<std::string> texts;
  if (!read_texts(prompt, file, &texts, &error)) return report("embed", error, kExitError);
  if (!query.empty()) texts.insert(texts.begin(), query);

  // One session serves every text: a text runs as one step (so in an encoder every token sees
  // all the others), at most the model's context and one step's batch.
  const size_t limit = std::min<size_t>(info.max_seq_len, MOTE_MAX_BATCH);
  std::vector<std::vector<int32_t>> tokens(texts.size());
  size_t longest = 1, total_tokens = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    bool truncated = false;
    if (!embed_tokens(loaded->model, info, texts[i], limit, &tokens[i], &truncated, &error))
      return report("embed", error, kExitError);
    if (tokens[i].empty())
      return report("embed", "text " + std::to_string(i + 1) + " is empty and this model has no BOS token", kExitUsage);
    if (truncated) {
      std::fprintf(stderr, "mote embed: text %zu is longer than %zu tokens (%s); truncated\n", i + 1, limit,
                   limit == info.max_seq_len ? "the model's context" : "one step");
    }
    longest = std::max(longest, tokens[i].size());
    total_tokens += tokens[i].size();
  }
  // Texts run together, as many as one step holds (each sees only itself, so its vector is the one
  // it gets alone), so the weights are read once per step, not per text. A step is at most the
  // model's context and MOTE_MAX_BATCH; with sliding windows it holds one text (mote_embed_batch
  // refuses more).
  const bool one_text_per_step = info.sliding_window != 0;
  const size_t step = one_text_per_step ? longest : std::max(longest, std::min(total_tokens, limit));
  mote_session_options session_options = mote_session_options_default();
  // f32, not the f16 default: the cache holds one step's texts only, so f16 would save little
  // memory and cost the vectors precision.
  session_options.kv_dtype = MOTE_KV_F32;
  session_options.batch_size = static_cast<uint32_t>(step);
  session_options.context_length = static_cast<uint32_t>(step);
  session_options.n_threads = threads;
  session_options.bidirectional = o.bidirectional ? 1 : 0;
  auto holder = open_session(loaded->model, session_options, &error);
  if (!holder) return report("embed", error, kExitError);

  const double start = now_seconds();
  std::vector<float> flat(texts.size() * info.dim);
  std::vector<int32_t> batch;
  std::vector<uint32_t> lengths;
  for (size_t first = 0, next = 0; first < texts.size(); first = next) {
    batch.clear();
    lengths.clear();
    for (; next < texts.size() && batch.size() + tokens[next].size() <= step && (batch.empty() || !one_text_per_step);
         ++next) {
      batch.insert(batch.end(), tokens[next].begin(), tokens[next].end());
      lengths.push_back(static_cast<uint32_t>(tokens[next].size()));
    }
    if (mote_embed_batch(&holder->session, batch.data(), lengths.data(), lengths.size(), o.pool, o.normalize ? 1 : 0,
                         &flat[first * info.dim], (texts.size() - first) * info.dim) != MOTE_OK) {
      return report("embed", mote_session_error(&holder->session), kExitError);
    }
  }
  const double seconds = now_seconds() - start;
  loaded->exit_if_changed();  // never print a vector computed from weights written in place
  if (query.empty()) {
    for (size_t i = 0; i < texts.size(); ++i) print_vector(&flat[i * info.dim], info.dim, o.output);
  } else {
    std::vector<std::pair<double, size_t>> ranked;
    for (size_t i = 1; i < texts.size(); ++i) ranked.emplace_back(cosine(&flat[0], &flat[i * info.dim], info.dim), i);
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
    if (top != 0 && ranked.size() > top) ranked.resize(top);
    for (const auto &r : ranked) std::printf("%.6f\t%zu\t%s\n", r.first, r.second, texts[r.second].c_str());
  }
  if (texts.size() > 1) {
    std::fprintf(stderr, "mote embed: %zu texts, %zu tokens in %.3f s (%.1f texts/s)\n", texts.size(), total_tokens,
                 seconds, seconds > 0 ? static_cast<double>(texts.size()) / seconds : 0.0);
  }
  return 0;
}

}  // namespace mote::cli
