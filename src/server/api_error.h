// The OpenAI error envelope {"error": {"message", "type", "param", "code"}} and the exception
// that carries it from request parsing/validation to the HTTP layer. Client mistakes are 4xx with
// a message that names the field; anything else becomes a 500 "internal_error".
#pragma once
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace portllm::server {

using Json = nlohmann::ordered_json;  // keeps the client's key order (tool schemas, tojson)

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string type, std::string param = {},
           std::string code = {})
      : std::runtime_error(message), status(status), type(std::move(type)),
        param(std::move(param)), code(std::move(code)) {}
  int status;
  std::string type, param, code;
};

// 400 invalid_request_error naming the offending field.
ApiError bad_request(const std::string& message, const std::string& param = {});

Json error_body(const std::string& message, const std::string& type, const std::string& param,
                const std::string& code);
Json error_body(const ApiError& e);

// Serializes JSON for the wire: invalid UTF-8 is replaced by U+FFFD so a response (or an SSE
// stream) never carries invalid UTF-8 whatever the engine or the client sent.
std::string dump_json(const Json& j);

}  // namespace portllm::server
