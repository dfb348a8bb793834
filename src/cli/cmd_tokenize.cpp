// triattn tokenize: text -> token ids with only the vocabulary loaded (no weights), so it
// works on vocab-only GGUFs and tokenizer-only directories too.
#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/escape_bytes.h"
#include "core/error.h"
#include "tokenizer/tokenizer.h"

namespace triattn::cli {

int cmd_tokenize(const std::vector<std::string>& args) {
  CLI::App app{"Tokenize text with a model's vocabulary", "triattn tokenize"};
  std::string model_path, text_file;
  std::vector<std::string> words;
  bool ids_only = false, no_bos = false, special = false;
  app.add_option("-m,--model", model_path,
                 "model or vocabulary: .gguf (vocab-only too), HF directory, tokenizer directory "
                 "(tokenizer.json, vocab.json + merges.txt, tiktoken tokenizer.model), llama2.c .bin")
      ->required();
  app.add_option("-f,--file", text_file, "read the text from a file ('-' = stdin)");
  app.add_flag("--ids", ids_only, "print only the ids, space-separated on one line");
  app.add_flag("--no-bos", no_bos, "never prepend BOS (default: as the model asks)");
  app.add_flag("--special", special, "turn special-token texts such as <|im_start|> into those tokens");
  app.add_option("text", words, "text to tokenize (several arguments are joined by spaces)");
  if (int rc = parse(app, args); rc >= 0) return rc;
  if (!words.empty() && !text_file.empty()) fail("give the text as arguments or with -f, not both");

  std::string text;
  if (!text_file.empty()) {
    text = read_text_file(text_file);
  } else {
    for (size_t i = 0; i < words.size(); ++i) text += (i ? " " : "") + words[i];
  }
  const auto tok = load_tokenizer_any(model_path);
  const std::vector<int32_t> ids = tok->encode(text, !no_bos && tok->add_bos_default(), special);
  if (ids_only) {
    for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
    std::cout << "\n";
    return 0;
  }
  // One token per line: the id, then the bytes it stands for, quoted so spaces show.
  for (int32_t id : ids) std::cout << id << "\t'" << escape_bytes(tok->token_to_bytes(id, true)) << "'\n";
  return 0;
}

}  // namespace triattn::cli
