// Serializes a model (model_data.hpp) as a .mote file (host side: converters and tests may allocate):
// the layout, the tokenizer section and the checksums; then checks that the runtime opens it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model_data.hpp"

namespace mote::convert {

// Lays out and checksums a complete .mote file.
std::vector<uint8_t> serialize(const ModelData &model);

// Opens bytes (a serialized .mote) with mote_model_open: the reader's own rules, so a file the
// converters write is always one the runtime accepts. False with the reader's message.
bool check_opens(const std::vector<uint8_t> &bytes, std::string *error);

// Writes bytes to path atomically (posix::write_file_atomically: a temporary file in the same
// folder, fsynced, renamed), so a failure never leaves half a model or harms an existing one.
bool write_file(const std::string &path, const std::vector<uint8_t> &bytes, std::string *error);

}  // namespace mote::convert
