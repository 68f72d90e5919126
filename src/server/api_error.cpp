#include "server/api_error.h"

namespace portllm::server {

ApiError bad_request(const std::string& message, const std::string& param) {
  return ApiError(400, message, "invalid_request_error", param);
}

Json error_body(const std::string& message, const std::string& type, const std::string& param,
                const std::string& code) {
  Json e = Json::object();
  e["message"] = message;
  e["type"] = type;
  e["param"] = param.empty() ? Json(nullptr) : Json(param);
  e["code"] = code.empty() ? Json(nullptr) : Json(code);
  return Json{{"error", e}};
}

Json error_body(const ApiError& e) { return error_body(e.what(), e.type, e.param, e.code); }

std::string dump_json(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace portllm::server
