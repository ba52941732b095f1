#include "tokenizer/pretokenizer_patterns.h"

namespace keel::tokenizer {

namespace {

// GPT-2's split: contractions, letters, digits, other symbols, whitespace.
const char* const kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

// Llama 3 / cl100k: case-insensitive contractions, digits in groups of up to three.
const char* const kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|)"
    R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen2: as Llama 3 but single digits.
const char* const kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|)"
    R"(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// o200k (GPT-4o, Llama 4): words split at lower->upper case changes.
const char* const kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|)"
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|)"
    R"(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Tekken (Mistral Nemo): as o200k without contractions, single digits.
const char* const kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|)"
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|)"
    R"(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Seed-Coder: single digits, symbols never absorb newlines.
const char* const kSeedCoder =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|)"
    R"(\p{N}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Bailing MoE (possessive quantifiers of the original relaxed to greedy, as llama.cpp).
const char* const kBailing =
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|)"
    R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";

// BLOOM / Poro: everything but whitespace and a few punctuation marks.
const char* const kBloom = R"( ?[^(\s|.,!?…。，、।۔،)]+)";

// DeepSeek LLM's letter class: Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee,
// Glagolitic, Coptic, Deseret, ... (explicit ranges from its tokenizer.json). Characters
// with a canonical singleton decomposition are escaped so no editor can normalize them.
const char* const kDeepseekLlmLetters =
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚ"
    "Ḁ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\\x{1F7D}ᾀ-ᾴᾶ-ᾼ\\x{1FBE}ῂ-ῄῆ-ῌῐ-\\x{1FD3}ῖ-\\x{1FDB}ῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\\x{2126}ℨ\\x{212A}-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄ"
    "Ⰰ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ\\x{10400}-\\x{1044F}𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+";

// CJK ideographs and Hangul as one run (DeepSeek).
const char* const kDeepseekCjk = "[一-龥ࠀ-一가-퟿]+";

}  // namespace

const std::vector<PreTokenizerPatterns>& known_pre_tokenizers() {
  static const std::vector<PreTokenizerPatterns> table = {
      {{"gpt-2", "default", "phi-2", "mpt", "olmo", "jais", "trillion", "roberta-bpe",
        "jina-es", "jina-de", "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code",
        "gigachat", "granite-docling", "a.x-4.0", "mellum"},
       {kGpt2},
       false},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
        "lfm2"},
       {kLlama3},
       true},
      {{"dbrx", "smaug-bpe", "chatglm-bpe"}, {kLlama3}, false},
      {{"qwen2", "stablelm2", "deepseek-r1-qwen", "megrez", "hunyuan", "grok-2"}, {kQwen2}, false},
      {{"gpt-4o", "llama4", "minimax-m2"}, {kGpt4o}, false},
      {{"tekken"}, {kTekken}, true},
      {{"seed-coder"}, {kSeedCoder}, false},
      {{"bailingmoe", "llada-moe"}, {kBailing}, false},
      {{"poro-chat", "bloom", "gpt3-finnish"}, {kBloom}, false},
      {{"viking"}, {kBloom, R"(\p{N})"}, false},
      {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"},
       {R"(\p{N})", kGpt2},
       false},
      {{"falcon"},
       {R"([\p{P}\$\+<=>\^~\|`]+)",
        R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))",
        "[0-9][0-9][0-9]"},
       false},
      {{"deepseek-llm"},
       {"[\\r\\n]", kDeepseekLlmLetters, "\\s?[!-/:-~！-／：-～‘-‟　-。]+", "\\s+$",
        kDeepseekCjk, R"(\p{N}+)"},
       false},
      {{"deepseek-coder"},
       {"[\\r\\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kDeepseekCjk, R"(\p{N})"},
       false},
      {{"deepseek-v3", "hunyuan-dense"},
       {R"(\p{N}{1,3})", "[一-龥぀-ゟ゠-ヿ]+",
        R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|)"
        R"( ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
       false},
  };
  return table;
}

}  // namespace keel::tokenizer
