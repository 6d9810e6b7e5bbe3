// WordPiece (BERT): Hugging Face tokenizers as the oracle on the committed lines of
// golden/wordpiece_hf_golden.txt (gen_wordpiece_golden.py: tokenizers 0.19.1 with bert-bge's
// uncased vocabulary, several normalizer options; every 8th uncased line also Hugging Face's
// decoded text), edge cases on a small hand-made vocabulary,
// decoding, and the converter's tokenizer.json / vocab.txt / GGUF imports. The oracle needs
// llama.cpp's ggml-vocab-bert-bge.gguf (models/fetch_tokenizer_vectors.sh) and skips without it
// (with MOTE_REQUIRE_TOKENIZER_VECTORS=1 absence is a failure); all-MiniLM-L6-v2's tokenizer
// files and nomic-embed-text-v1.5's GGUF are checked too when mote's cache holds them. Those
// cases ("cached") are ctest's test_wordpiece_cached, so their absence reads "Skipped".
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.hpp"
#include "gguf/gguf_writer.hpp"
#include "hf/hf_tokenizer.hpp"
#include "test_support.hpp"
#include "tokenizer_support.hpp"
#include "vocab/wordpiece_vocab.hpp"

namespace {

using mote::format::kTokChineseChars;
using mote::format::kTokCleanText;
using mote::format::kTokLowercase;
using mote::format::kTokStripAccents;
constexpr uint32_t kUncased = kTokLowercase | kTokStripAccents | kTokChineseChars | kTokCleanText;

std::vector<int32_t> tokenize(const mote_model &model, const std::string &text, uint32_t flags = 0) {
  std::vector<int32_t> ids(text.size() + 2);  // the documented bound, exactly
  size_t n = 0;
  REQUIRE(mote_tokenize(&model, text.data(), text.size(), flags, ids.data(), ids.size(), &n) == MOTE_OK);
  ids.resize(n);
  return ids;
}

std::string join(const std::vector<int32_t> &ids) {
  std::ostringstream out;
  for (const int32_t id : ids) out << id << ' ';
  return out.str();
}

// Undoes gen_wordpiece_golden.py's escapes: \\ \t \n \r \xHH.
std::string unescape(const std::string &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    if (c == 'x') {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += c == 't' ? '\t' : c == 'n' ? '\n' : c == 'r' ? '\r' : c;
    }
  }
  return out;
}

std::string bert_bge_path() {
  const char *dir = std::getenv("MOTE_TOKENIZER_VECTORS_DIR");
  const std::string path =
      (dir != nullptr ? std::string(dir) : mote_test::cache_path("tokenizer-vectors")) + "/ggml-vocab-bert-bge.gguf";
  if (mote_test::file_exists(path)) return path;
  const char *require = std::getenv("MOTE_REQUIRE_TOKENIZER_VECTORS");
  if (require != nullptr && std::string(require) == "1") FAIL("tokenizer vectors missing: " << path);
  return "";
}

// A WordPiece vocabulary of these pieces around a tiny model: [PAD] [UNK] [CLS] [SEP] [MASK]
// first (control), then the pieces (normal).
std::unique_ptr<mote_test::TinyModel> small_model(const std::vector<std::string> &pieces, uint32_t flags = kUncased) {
  std::vector<std::string> all = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  std::vector<uint8_t> types(all.size(), mote::format::kTokenControl);
  for (const std::string &p : pieces) {
    all.push_back(p);
    types.push_back(mote::format::kTokenNormal);
  }
  mote::convert::TokenizerData tok;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::build_wordpiece_vocab(all, types, {}, 1, 2, 3, "##", 100, "test", &tok, &error),
                  error);
  tok.flags = flags | mote::format::kTokAddBos;
  return mote_test::open_tiny_model(tok);
}

const std::vector<std::string> kPieces = {"hello", "world", "un", "##aff", "##able", ",", "!", ".", "a",   "##a",
                                          "cafe",  "##s",   "中", "the",   "##e",    "[", "]", "x", "##x", "sep"};
enum : int32_t { kUnk = 1, kCls = 2, kSep = 3, kHello = 5, kWorld, kUn, kAff, kAble, kComma, kBang, kDot, kA, kHashA };
enum : int32_t { kCafe = 15, kHashS, kZhong, kThe, kHashE, kOpen, kClose, kX, kHashX, kSepWord };

}  // namespace

namespace {

// Runs the committed lines whose normalizer options a model of model_for(flags) has (null: the
// lines of other options are left out) and checks Hugging Face's ids, bare and framed by [CLS]
// (101) and [SEP] (102). Returns the lines checked.
template <typename ModelFor>
size_t check_golden(const char *name, ModelFor model_for) {
  const std::vector<unsigned char> golden = mote_test::read_file(mote_test::golden_path("wordpiece_hf_golden.txt"));
  std::istringstream lines(std::string(golden.begin(), golden.end()));
  size_t checked = 0, passed = 0, decoded_lines = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab1 = line.find('\t'), tab2 = line.find('\t', tab1 + 1);
    REQUIRE(tab2 != std::string::npos);
    const mote_model *model = model_for(static_cast<uint32_t>(std::stoul(line.substr(0, tab1), nullptr, 16)));
    if (model == nullptr) continue;
    const std::string text = unescape(line.substr(tab1 + 1, tab2 - tab1 - 1));
    const size_t tab3 = line.find('\t', tab2 + 1);  // before the decoded text, when the line has it
    std::vector<int32_t> expected;
    std::istringstream ids(line.substr(tab2 + 1, tab3 == std::string::npos ? std::string::npos : tab3 - tab2 - 1));
    for (int32_t id = 0; ids >> id;) expected.push_back(id);
    const std::vector<int32_t> got = tokenize(*model, text);
    std::vector<int32_t> framed = {101};
    framed.insert(framed.end(), expected.begin(), expected.end());
    framed.push_back(102);
    bool ok = got == expected && tokenize(*model, text, MOTE_TOKENIZE_ADD_BOS) == framed;
    if (tab3 != std::string::npos) {
      const std::string decoded = mote_test::detokenize(*model, expected);
      if (decoded != unescape(line.substr(tab3 + 1))) FAIL_CHECK("decodes to '" << decoded << "'");
      ok = ok && decoded == unescape(line.substr(tab3 + 1));
      decoded_lines += 1;
    }
    if (!ok) FAIL_CHECK(std::string(name) << " '" << text << "': mote " << join(got) << "HF " << join(expected));
    checked += 1;
    passed += ok ? 1 : 0;
  }
  MESSAGE(std::string(name) << ": " << passed << "/" << checked << " lines match Hugging Face tokenizers ("
                            << decoded_lines << " decoded too)");
  return checked;
}

// A file of mote's cache, or "" after saying it skips.
std::string cached(const std::string &name, const char *fetched_by) {
  const std::string path = mote_test::cache_path(name);
  if (mote_test::file_exists(path)) return path;
  MOTE_SKIP(path << " is absent (" << fetched_by << ")");
  return "";
}

std::string slurp(const std::string &path) {
  const std::vector<unsigned char> bytes = mote_test::read_file(path);
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace

TEST_CASE("WordPiece cached: Hugging Face tokenizers' ids for every committed line (bert-bge GGUF)") {
  const std::string gguf = bert_bge_path();
  if (gguf.empty()) {
    MOTE_SKIP("ggml-vocab-bert-bge.gguf is absent: run models/fetch_tokenizer_vectors.sh");
    return;
  }
  std::map<uint32_t, std::unique_ptr<mote_test::TinyModel>> models;  // one per normalizer option set
  const size_t checked = check_golden("bert-bge", [&](uint32_t flags) {
    auto &model = models[flags];
    if (!model) {
      model = mote_test::open_gguf_tokenizer(
          gguf, [&](mote::convert::TokenizerData &t) { t.flags = (t.flags & ~kUncased) | flags; });
    }
    return &model->model;
  });
  CHECK(checked > 3000);
}

// The uncased lines joined by newlines are one text whose ids are the lines' ids in turn (a
// newline ends every word): about a megabyte of it, timed.
TEST_CASE("WordPiece cached: a megabyte of the lines at once") {
  const std::string gguf = bert_bge_path();
  if (gguf.empty()) {
    MOTE_SKIP("ggml-vocab-bert-bge.gguf is absent: run models/fetch_tokenizer_vectors.sh");
    return;
  }
  const auto tiny = mote_test::open_gguf_tokenizer(gguf);
  std::string text;
  std::vector<int32_t> expected;
  const std::vector<unsigned char> golden = mote_test::read_file(mote_test::golden_path("wordpiece_hf_golden.txt"));
  std::istringstream lines(std::string(golden.begin(), golden.end()));
  for (std::string line; std::getline(lines, line);) {
    const size_t tab1 = line.find('\t'), tab2 = line.find('\t', tab1 + 1);
    if (line.empty() || line[0] == '#' || std::stoul(line.substr(0, tab1), nullptr, 16) != kUncased) continue;
    text += unescape(line.substr(tab1 + 1, tab2 - tab1 - 1)) + "\n";
    const size_t tab3 = line.find('\t', tab2 + 1);
    std::istringstream ids(line.substr(tab2 + 1, tab3 == std::string::npos ? std::string::npos : tab3 - tab2 - 1));
    for (int32_t id = 0; ids >> id;) expected.push_back(id);
  }
  const size_t copies = (1u << 20) / text.size() + 1;
  std::string big;
  std::vector<int32_t> big_expected;
  for (size_t i = 0; i < copies; ++i) {
    big += text;
    big_expected.insert(big_expected.end(), expected.begin(), expected.end());
  }
  std::vector<int32_t> ids;
  const double seconds = mote_test::best_seconds(2, [&] { ids = tokenize(tiny->model, big); });
  CHECK(ids == big_expected);
  MESSAGE("WordPiece: " << big.size() << " bytes into " << ids.size() << " ids in " << seconds << " s");
}

// all-MiniLM-L6-v2 and nomic-embed-text-v1.5 hold bert-bge's vocabulary: their own tokenizer
// files, imported as they are, must give the uncased lines' ids.
TEST_CASE("WordPiece cached: all-MiniLM-L6-v2's tokenizer.json and vocab.txt") {
  const std::string dir =
      cached("all-MiniLM-L6-v2/tokenizer.json", "Hugging Face's sentence-transformers/all-MiniLM-L6-v2");
  if (dir.empty()) return;
  const std::string folder = dir.substr(0, dir.size() - std::string("/tokenizer.json").size());
  const std::string config = slurp(folder + "/tokenizer_config.json");
  for (const bool vocab_txt : {false, true}) {
    mote::convert::TokenizerData tok;
    std::string error;
    REQUIRE_MESSAGE(
        (vocab_txt ? mote::convert::hf_vocab_txt_tokenizer(slurp(folder + "/vocab.txt"), config, 30522, &tok, &error)
                   : mote::convert::hf_tokenizer(slurp(dir), config, 30522, &tok, &error)),
        error);
    CHECK(tok.flags == (kUncased | mote::format::kTokAddBos));
    CHECK((tok.unk_id == 100 && tok.bos_id == 101 && tok.eos_id == 102));
    const auto tiny = mote_test::open_tiny_model(tok);
    const size_t checked = check_golden(vocab_txt ? "all-MiniLM-L6-v2 vocab.txt" : "all-MiniLM-L6-v2 tokenizer.json",
                                        [&](uint32_t flags) { return flags == kUncased ? &tiny->model : nullptr; });
    CHECK(checked > 2000);
  }
}

TEST_CASE("WordPiece cached: nomic-embed-text-v1.5's GGUF vocabulary") {
  const std::string gguf = cached("nomic-embed-text-v1.5.f16.gguf", "the nomic-embed-text-v1.5 GGUF");
  if (gguf.empty()) return;
  const auto tiny = mote_test::open_gguf_tokenizer(gguf);
  const size_t checked =
      check_golden("nomic-embed-text-v1.5", [&](uint32_t flags) { return flags == kUncased ? &tiny->model : nullptr; });
  CHECK(checked > 2000);
}

TEST_CASE("WordPiece: greedy longest-match pieces, punctuation, [UNK]") {
  const auto tiny = small_model(kPieces);
  const mote_model &m = tiny->model;
  CHECK(tokenize(m, "").empty());
  CHECK(tokenize(m, "", MOTE_TOKENIZE_ADD_BOS) == std::vector<int32_t>{kCls, kSep});
  CHECK(tokenize(m, " \t\n ").empty());
  CHECK(tokenize(m, "!!!,.") == std::vector<int32_t>{kBang, kBang, kBang, kComma, kDot});
  CHECK(tokenize(m, "Unaffable, WORLD!") == std::vector<int32_t>{kUn, kAff, kAble, kComma, kWorld, kBang});
  CHECK(tokenize(m, "unaffablez") == std::vector<int32_t>{kUnk});                // no piece for "z": the whole word
  CHECK(tokenize(m, "Cafés thé") == std::vector<int32_t>{kCafe, kHashS, kThe});  // accents stripped
  CHECK(tokenize(m, "中中") == std::vector<int32_t>{kZhong, kZhong});            // CJK: a word each
  CHECK(tokenize(m, "hello", MOTE_TOKENIZE_ADD_BOS) == std::vector<int32_t>{kCls, kHello, kSep});
  CHECK(mote_token_type_of(&m, kCls) == MOTE_TOKEN_CONTROL);
  mote_model_info info{};
  mote_model_info_get(&m, &info);
  CHECK(info.tokenizer_kind == MOTE_TOKENIZER_WORDPIECE);
  CHECK(info.add_bos == 1);
}

TEST_CASE("WordPiece: a word of 100 code points is pieces, of 101 [UNK]") {
  const auto tiny = small_model(kPieces);
  const std::vector<int32_t> hundred = tokenize(tiny->model, std::string(100, 'a'));
  REQUIRE(hundred.size() == 100);
  CHECK(hundred.front() == kA);
  CHECK(hundred.back() == kHashA);
  CHECK(tokenize(tiny->model, std::string(101, 'a')) == std::vector<int32_t>{kUnk});
  CHECK(tokenize(tiny->model, std::string(5000, 'a') + " hello") == std::vector<int32_t>{kUnk, kHello});
  std::string accented;  // 101 code points after stripping: "a" + U+0301 each
  for (int i = 0; i < 101; ++i) accented += "a\xCC\x81";
  CHECK(tokenize(tiny->model, accented) == std::vector<int32_t>{kUnk});
}

TEST_CASE("WordPiece: invalid UTF-8 is U+FFFD, which clean text drops") {
  const auto tiny = small_model(kPieces);
  CHECK(tokenize(tiny->model, "hello\xFF world\xE4\xB8") == std::vector<int32_t>{kHello, kWorld});
  CHECK(tokenize(tiny->model, "\xC0\x80\xED\xA0\x80\xF4\x90\x80\x80").empty());  // overlong, surrogate, > U+10FFFF
  const auto raw = small_model(kPieces, kTokLowercase);  // no clean text: U+FFFD is a word of its own
  CHECK(tokenize(raw->model, "a\xFF") == std::vector<int32_t>{kUnk});
  for (int byte = 0; byte < 256; ++byte) {  // every lone byte, no crash and ids in range
    const std::string text = "x" + std::string(1, static_cast<char>(byte)) + "x";
    for (const int32_t id : tokenize(raw->model, text)) CHECK(id < static_cast<int32_t>(kPieces.size() + 5));
  }
}

TEST_CASE("WordPiece: normalizer options follow the flags") {
  const auto cased = small_model(kPieces, kTokChineseChars | kTokCleanText);
  CHECK(tokenize(cased->model, "Hello hello") == std::vector<int32_t>{kUnk, kHello});
  CHECK(tokenize(cased->model, "café") == std::vector<int32_t>{kUnk});
  const auto no_cjk = small_model(kPieces, kTokLowercase | kTokCleanText);
  CHECK(tokenize(no_cjk->model, "中中") == std::vector<int32_t>{kUnk});  // one word "中中": no "##中"
  const auto no_clean = small_model(kPieces, kTokLowercase | kTokChineseChars);
  CHECK(tokenize(no_clean->model, "hel\x01lo") == std::vector<int32_t>{kUnk});  // the control stays in the word
  CHECK(tokenize(small_model(kPieces)->model, "hel\x01lo") == std::vector<int32_t>{kHello});
}

TEST_CASE("WordPiece: special tokens in text only when asked") {
  const auto tiny = small_model(kPieces);
  CHECK(tokenize(tiny->model, "hello [SEP] x", MOTE_TOKENIZE_SPECIAL) == std::vector<int32_t>{kHello, kSep, kX});
  CHECK(tokenize(tiny->model, "hello [SEP] x") == std::vector<int32_t>{kHello, kOpen, kSepWord, kClose, kX});
  CHECK(tokenize(tiny->model, "[sep]", MOTE_TOKENIZE_SPECIAL) == std::vector<int32_t>{kOpen, kSepWord, kClose});
}

TEST_CASE("WordPiece: a small buffer is MOTE_ERR_BUFFER_TOO_SMALL with the size needed") {
  const auto tiny = small_model(kPieces);
  int32_t ids[3] = {};
  size_t n = 0;
  CHECK(mote_tokenize(&tiny->model, "hello world", 11, 0, ids, 1, &n) == MOTE_ERR_BUFFER_TOO_SMALL);
  CHECK(n == 2);
  CHECK(mote_tokenize(&tiny->model, "hello world", 11, MOTE_TOKENIZE_ADD_BOS, ids, 3, &n) == MOTE_ERR_BUFFER_TOO_SMALL);
  CHECK(n == 4);
  CHECK(mote_tokenize(&tiny->model, "hello world", 11, 0, nullptr, 0, &n) == MOTE_ERR_BUFFER_TOO_SMALL);
  CHECK(n == 2);
  CHECK(mote_tokenize(&tiny->model, "unaffable", 9, 0, ids, 3, &n) == MOTE_OK);  // fewer than text_n + 2
  CHECK(n == 3);
  CHECK(mote_tokenize(&tiny->model, nullptr, 1, 0, ids, 3, &n) == MOTE_ERR_INVALID_ARGUMENT);
}

TEST_CASE("WordPiece: detokenizing joins ## pieces, spaces words, spells special tokens") {
  const auto tiny = small_model(kPieces);
  const std::vector<int32_t> ids = {kCls, kUn, kAff, kAble, kComma, kWorld, kSep};
  CHECK(mote_test::detokenize(tiny->model, ids) == "[CLS] unaffable, world [SEP]");
  CHECK(mote_test::detokenize(tiny->model, {kHashS, kHello}) == "s hello");  // a first ## piece: no prefix
  char out[8];
  size_t n = 0;
  CHECK(mote_detokenize(&tiny->model, kHello, kWorld, out, 6, &n) == MOTE_OK);
  CHECK(std::string(out, n) == " world");
  CHECK(mote_detokenize(&tiny->model, kHello, kWorld, out, 5, &n) == MOTE_ERR_BUFFER_TOO_SMALL);
  CHECK(n == 6);
}

TEST_CASE("WordPiece import: tokenizer.json, vocab.txt and llama.cpp's phantom spaces") {
  const std::string json = R"({
    "added_tokens": [{"id": 0, "content": "[PAD]", "special": true}, {"id": 1, "content": "[UNK]", "special": true},
                     {"id": 2, "content": "[CLS]", "special": true}, {"id": 3, "content": "[SEP]", "special": true}],
    "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": false,
                   "strip_accents": null, "lowercase": false},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100,
              "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "hello": 4, "##s": 5}}})";
  mote::convert::TokenizerData tok;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::hf_tokenizer(json, "", 7, &tok, &error), error);
  CHECK(tok.kind == mote::format::TokenizerKind::wordpiece);
  CHECK(tok.flags == (kTokCleanText | mote::format::kTokAddBos));  // strip_accents null follows lowercase
  CHECK(tok.unk_id == 1);
  CHECK(tok.bos_id == 2);
  CHECK(tok.eos_id == 3);
  CHECK(tok.types[2] == mote::format::kTokenControl);
  CHECK(tok.pieces[5] == "##s");
  CHECK(tok.types[6] == mote::format::kTokenUnused);  // the model's vocabulary is larger
  const auto tiny = mote_test::open_tiny_model(tok);
  CHECK(tokenize(tiny->model, "hellos Hello", MOTE_TOKENIZE_ADD_BOS) == std::vector<int32_t>{2, 4, 5, 1, 3});

  std::string bad = json;
  bad.replace(bad.find("\"##\""), 4, "\"@@\"");
  CHECK_FALSE(mote::convert::hf_tokenizer(bad, "", 7, &tok, &error));
  CHECK(error.find("continuing prefix '@@'") != std::string::npos);
  bad = json;
  bad.replace(bad.find("\"max_input_chars_per_word\": 100"), 31, "\"max_input_chars_per_word\": 200");
  CHECK_FALSE(mote::convert::hf_tokenizer(bad, "", 7, &tok, &error));
  CHECK(error.find("max_input_chars_per_word 200") != std::string::npos);
  bad = json;
  bad.replace(bad.find("\"BertNormalizer\""), 16, "\"NFC\"");
  CHECK_FALSE(mote::convert::hf_tokenizer(bad, "", 7, &tok, &error));
  CHECK(error.find("BertNormalizer") != std::string::npos);

  REQUIRE_MESSAGE(mote::convert::hf_vocab_txt_tokenizer("[PAD]\r\n[UNK]\n[CLS]\n[SEP]\nhello\n##s\n",
                                                        R"({"do_lower_case": false})", 6, &tok, &error),
                  error);
  CHECK(tok.kind == mote::format::TokenizerKind::wordpiece);
  CHECK(tok.flags == (kTokChineseChars | kTokCleanText | mote::format::kTokAddBos));
  CHECK(tok.pieces[0] == "[PAD]");
  CHECK(tok.types[0] == mote::format::kTokenControl);
  CHECK(tok.types[4] == mote::format::kTokenNormal);
  CHECK((tok.unk_id == 1 && tok.bos_id == 2 && tok.eos_id == 3));
  REQUIRE(mote::convert::hf_vocab_txt_tokenizer("[PAD]\n[UNK]\n", "", 2, &tok, &error));
  CHECK(tok.flags == (kUncased | mote::format::kTokAddBos));  // BertTokenizer's defaults
  CHECK_FALSE(mote::convert::hf_vocab_txt_tokenizer("[PAD]\nhello\n", "", 2, &tok, &error));
  CHECK(error.find("no unknown token") != std::string::npos);

  CHECK(mote::convert::wordpiece_from_phantom_space("\xE2\x96\x81the") == "the");
  CHECK(mote::convert::wordpiece_from_phantom_space("s") == "##s");
  CHECK(mote::convert::wordpiece_from_phantom_space("[unused0]") == "[unused0]");
}

TEST_CASE("WordPiece: a GGUF written by mote imports back the same tokenizer") {
  std::vector<std::string> pieces = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  pieces.insert(pieces.end(), kPieces.begin(), kPieces.end());
  std::vector<uint8_t> types(pieces.size(), mote::format::kTokenNormal);
  for (size_t i = 0; i < 5; ++i) types[i] = mote::format::kTokenControl;
  mote::convert::TokenizerData tok;
  std::string error;
  REQUIRE(mote::convert::build_wordpiece_vocab(pieces, types, {}, 1, 2, 3, "##", 100, "test", &tok, &error));
  std::vector<uint8_t> bytes;
  REQUIRE_MESSAGE(mote::convert::serialize_gguf(mote_test::tiny_model_data(tok), &bytes, &error), error);
  mote::convert::GgufFile file;
  REQUIRE_MESSAGE(mote::convert::parse_gguf(bytes.data(), bytes.size(), &file, &error), error);
  mote::convert::Meta meta{file, &error};
  mote::convert::ModelData back;
  REQUIRE_MESSAGE(mote::convert::map_tokenizer(file, meta, static_cast<uint32_t>(pieces.size()), &back, &error), error);
  CHECK(back.tokenizer.kind == mote::format::TokenizerKind::wordpiece);
  CHECK(back.tokenizer.pieces == tok.pieces);
  CHECK(back.tokenizer.types == tok.types);
  CHECK(back.tokenizer.flags == tok.flags);  // a GGUF "bert" vocabulary is uncased
  CHECK((back.tokenizer.unk_id == 1 && back.tokenizer.bos_id == 2 && back.tokenizer.eos_id == 3));
}

TEST_CASE("WordPiece cached: llama.cpp's bert-bge GGUF imported") {
  const std::string gguf = bert_bge_path();
  if (gguf.empty()) {
    MOTE_SKIP("ggml-vocab-bert-bge.gguf is absent: run models/fetch_tokenizer_vectors.sh");
    return;
  }
  const auto tiny = mote_test::open_gguf_tokenizer(gguf);
  mote_model_info info{};
  mote_model_info_get(&tiny->model, &info);
  CHECK(info.tokenizer_kind == MOTE_TOKENIZER_WORDPIECE);
  CHECK(info.bos_id == 101);  // [CLS]
  CHECK(info.eos_id == 102);  // [SEP]
  CHECK(tokenize(tiny->model, "Hello, world!", MOTE_TOKENIZE_ADD_BOS) ==
        std::vector<int32_t>{101, 7592, 1010, 2088, 999, 102});
  const std::vector<int32_t> ids = tokenize(tiny->model, "Unaffable tokenizers!");
  CHECK(mote_test::detokenize(tiny->model, ids) == "unaffable tokenizers!");
}
