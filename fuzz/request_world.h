#pragma once
// What the request targets parse against, loaded once: stories260k and its chat prompt (the
// server's two endpoints need a model for token ids and a template for messages).
#include <memory>
#include <string>

#include "chat/chat_prompt.h"
#include "model/model.h"

namespace triattn::fuzz {

struct RequestWorld {
  std::shared_ptr<const Model> model;
  std::unique_ptr<ChatPrompt> chat;
};

inline RequestWorld load_request_world() {
  LoadOptions opt;
  opt.repack = false;
  opt.threads = 1;
  const std::string path = TRIATTN_SHARED_DIR "/models/stories260k/stories260K.bin";
  RequestWorld w;
  w.model = Model::load(path, opt);
  w.chat = std::make_unique<ChatPrompt>(w.model->tokenizer(), path, ChatPromptOptions{}, nullptr);
  return w;
}

}  // namespace triattn::fuzz
