// Chat templating of the pinned llama.cpp, a C ABI for reference/chat.py.
//
// Two paths, each llama.cpp's own:
//   - the built-in formats (src/llama-chat.cpp): llama_chat_apply_template and
//     llama_chat_builtin_templates, the C API of include/llama.h;
//   - the Jinja path of common/ (common/chat.cpp): common_chat_templates_init and
//     common_chat_templates_apply, which llama-server and llama-cli call, with llama.cpp's
//     own Jinja engine (common/jinja/).
// The prompt ids are made as llama-server makes them (see ref_chat_apply below).
//
// A request crosses as one JSON string (common_json parses it, as the server parses its
// request body); the answer comes back as raw bytes (the rendered prompt may be any
// bytes) plus ids. Every C++ exception becomes an error code plus its message: a
// template that raises (raise_exception, a parse error, a refusal) must reach Python as
// an exception, never abort the interpreter.

#include "llama.h"
#include "chat.h"    // common/: common_chat_templates_*, common_chat_msgs_parse_oaicompat
#include "common.h"  // common/: common_tokenize
#include "log.h"     // common/: common_log_set_verbosity_thold

// common/ takes its JSON as common_json (common/json.h) from 0c1e570 on, as
// nlohmann::ordered_json (vendor/) before, e.g. at 4df29be; this file uses only what both have.
#if __has_include("json.h")
#include "json.h"
#else
#include <nlohmann/json.hpp>
using common_json = nlohmann::ordered_json;
#endif

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <vector>

namespace {

char * copy_out(const std::string & s) {
    char * out = static_cast<char *>(std::malloc(s.size() + 1));
    if (out) {
        std::memcpy(out, s.data(), s.size());
        out[s.size()] = '\0';
    }
    return out;
}

std::string str_field(const common_json & req, const char * key, const std::string & def) {
    if (!req.contains(key) || req.at(key).is_null()) {
        return def;
    }
    return req.at(key).get<std::string>();
}

bool bool_field(const common_json & req, const char * key, bool def) {
    if (!req.contains(key) || req.at(key).is_null()) {
        return def;
    }
    return req.at(key).get<bool>();
}

// The template kwargs as llama-server passes them (tools/server/server-common.cpp,
// oaicompat_chat_params_parse): each value dumped to JSON text, and "enable_thinking"
// given as a JSON boolean overriding inputs.enable_thinking (a string is refused there).
void set_kwargs(const common_json & req, common_chat_templates_inputs & inputs) {
    if (!req.contains("kwargs") || req.at("kwargs").is_null()) {
        return;
    }
    const common_json & kwargs = req.at("kwargs");
    if (!kwargs.is_object()) {
        throw std::invalid_argument("'kwargs' must be a JSON object");
    }
    for (const auto & item : kwargs.items()) {
        inputs.chat_template_kwargs[item.key()] = item.value().dump();
    }
    auto it = inputs.chat_template_kwargs.find("enable_thinking");
    if (it != inputs.chat_template_kwargs.end()) {
        if (it->second == "true") {
            inputs.enable_thinking = true;
        } else if (it->second == "false") {
            inputs.enable_thinking = false;
        } else if (!it->second.empty() && it->second[0] == '"') {
            throw std::invalid_argument("invalid type for \"enable_thinking\" (expected boolean, got string)");
        }
    }
}

// The inputs llama-server gives common_chat_templates_apply for a chat request with its
// default options (tools/server/server-common.cpp, oaicompat_chat_params_parse, and the
// defaults of common/common.h and tools/server/server-context.cpp):
//   - reasoning_format: COMMON_REASONING_FORMAT_DEEPSEEK (common_params::reasoning_format);
//   - enable_thinking: enable_reasoning (-1, auto) != 0 && the template supports thinking
//     (common_chat_templates_support_enable_thinking, server-context.cpp), then the
//     "enable_thinking" kwarg overrides it;
//   - parallel_tool_calls: the template caps' supports_parallel_tool_calls;
//   - tools without Jinja (--no-jinja) are refused;
//   - prefill_assistant (true): a conversation that ends with an assistant message is
//     continued (continue_final_message AUTO, no generation prompt); two trailing
//     assistant messages are refused.
void server_inputs(const common_json & req, const common_chat_templates * tmpls, common_chat_templates_inputs & inputs) {
    inputs.use_jinja = bool_field(req, "jinja", true);
    inputs.add_generation_prompt = bool_field(req, "add_generation_prompt", true);
    inputs.messages = common_chat_msgs_parse_oaicompat(req.contains("messages") ? req.at("messages")
                                                                             : common_json::array());
    if (req.contains("tools") && !req.at("tools").is_null()) {
        if (!inputs.use_jinja && req.at("tools").is_array() && !req.at("tools").empty()) {
            throw std::runtime_error("tools param requires --jinja flag");
        }
        inputs.tools = common_chat_tools_parse_oaicompat(req.at("tools"));
    }
    inputs.parallel_tool_calls = common_chat_templates_get_caps(tmpls)["supports_parallel_tool_calls"];
    const auto n = inputs.messages.size();
    if (n > 0 && inputs.messages.back().role == "assistant") {
        if (n >= 2 && inputs.messages[n - 2].role == "assistant") {
            throw std::invalid_argument("Cannot have 2 or more assistant messages at the end of the list.");
        }
        inputs.continue_final_message = COMMON_CHAT_CONTINUATION_AUTO;
        inputs.add_generation_prompt = false;
        if (!inputs.messages.back().tool_calls.empty()) {
            throw std::invalid_argument("Cannot continue an assistant message that contains tool calls.");
        }
    }
    inputs.reasoning_format = COMMON_REASONING_FORMAT_DEEPSEEK;
    if (inputs.use_jinja) {
        try {
            inputs.enable_thinking = common_chat_templates_support_enable_thinking(tmpls);
        } catch (const std::exception & e) {
            // the server asks this once at startup, without the request's kwargs, and refuses to start
            throw std::runtime_error(std::string("llama-server would not start with this template: "
                                                 "common_chat_templates_support_enable_thinking raised: ") + e.what());
        }
    } else {
        inputs.enable_thinking = false;
    }
    set_kwargs(req, inputs);
}

}  // namespace

extern "C" {

// Frees what ref_chat_* returned (text, ids, error).
void ref_chat_free(void * p) {
    std::free(p);
}

// common/'s own log (LOG_WRN ... in chat.cpp) writes to stderr from a worker thread;
// the oracle stays silent: a template's warnings are not its answer.
void ref_chat_init(void) {
    common_log_set_verbosity_thold(-1);
}

// llama_chat_builtin_templates: how many names there are; fills up to len of them.
int32_t ref_chat_builtin_templates(const char ** output, size_t len) {
    return llama_chat_builtin_templates(output, len);
}

// llama_chat_apply_template(tmpl, chat, n_msg, add_ass): 0 and *text (malloc'd, *text_len
// bytes) on success; 1 and *error when llama.cpp answers a negative size (the template is
// not one it detects) or throws.
int32_t ref_chat_builtin_apply(const char * tmpl, const char * const * roles, const char * const * contents,
                               size_t n_msg, int add_ass, char ** text, size_t * text_len, char ** error) {
    *text = nullptr;
    *text_len = 0;
    *error = nullptr;
    try {
        std::vector<llama_chat_message> chat(n_msg);
        size_t alloc = 0;
        for (size_t i = 0; i < n_msg; i++) {
            chat[i] = { roles[i], contents[i] };
            alloc += std::strlen(roles[i]) + std::strlen(contents[i]);
        }
        std::vector<char> buf(2 * alloc + 64);
        int32_t res = llama_chat_apply_template(tmpl, chat.data(), n_msg, add_ass != 0, buf.data(), (int32_t) buf.size());
        if (res > (int32_t) buf.size()) {  // the size it needs: apply again into a buffer that holds it
            buf.resize(res);
            res = llama_chat_apply_template(tmpl, chat.data(), n_msg, add_ass != 0, buf.data(), (int32_t) buf.size());
        }
        if (res < 0) {
            *error = copy_out("llama_chat_apply_template returned " + std::to_string(res) +
                              " (llm_chat_detect_template does not know this template)");
            return 1;
        }
        *text = copy_out(std::string(buf.data(), res));
        *text_len = res;
        return 0;
    } catch (const std::exception & e) {
        *error = copy_out(e.what());
        return 1;
    } catch (...) {
        *error = copy_out("llama_chat_apply_template threw a non-standard exception");
        return 1;
    }
}

// The Jinja path, as llama-server renders a chat request, then its prompt ids.
//
// request: {"template": S|null, "messages": [...], "tools": [...]|null,
//           "add_generation_prompt": B, "kwargs": {...}|null, "jinja": B (default true),
//           "bos_token": S, "eos_token": S (used only without a model)}
// model: a loaded llama_model (vocab_only is enough) or NULL. With a model, an empty or
// absent template means the model's own `tokenizer.chat_template`, and BOS/EOS texts and
// add_bos/add_eos come from its vocab (common_chat_templates_init ignores the overrides).
//
// Rendering: common_chat_templates_init + common_chat_templates_apply, with the inputs
// llama-server gives it (server_inputs above: messages and tools parsed by
// common_chat_msgs_parse_oaicompat/common_chat_tools_parse_oaicompat, its defaults). The prompt comes back as one string: the Jinja engine marks
// the parts that came from a message (common/jinja/string.h, is_input), but
// common_chat_template_direct_apply_impl (common/chat.cpp) joins the parts with
// `parts->as_string().str()`, dropping the marks, and the server tokenizes that string.
//
// Prompt ids (only with a model): llama-server's chat completion path
// (tools/server/server-context.cpp, handle_completions_impl) calls
// tokenize_input_prompts(vocab, mctx, prompt, /* add_special */ true, /* parse_special */ true),
// which for a string prompt is tokenize_mixed -> common_tokenize(vocab, prompt, true, true)
// (tools/server/server-common.cpp). So special-token texts inside message content are
// parsed as special tokens, and BOS is added when the vocab's add_bos says so. The
// double-BOS guard is the renderer's, not the tokenizer's: common_chat_template_direct_apply_impl
// strips a leading bos_token text from the rendered prompt when the vocab's add_bos is
// set (and a trailing eos_token text when add_eos is set); llama_tokenize itself only
// warns about two BOS (src/llama-vocab.cpp). The legacy path (jinja=false) strips nothing.
//
// Returns 0 with *text/*text_len (and *ids/*n_ids with a model), or 1 with *error.
int32_t ref_chat_apply(const void * model, const char * request_json, char ** text, size_t * text_len,
                       int32_t ** ids, size_t * n_ids, char ** error) {
    *text = nullptr;
    *text_len = 0;
    *ids = nullptr;
    *n_ids = 0;
    *error = nullptr;
    try {
        const common_json req = common_json::parse(request_json);
        const auto * mdl = static_cast<const llama_model *>(model);
        const std::string tmpl = str_field(req, "template", "");
        if (mdl == nullptr && tmpl.empty()) {
            // common_chat_templates_init would GGML_ASSERT(model != nullptr) and abort
            throw std::invalid_argument("no template given and no vocab loaded: give a template string");
        }
        auto tmpls = common_chat_templates_init(mdl, tmpl, str_field(req, "bos_token", ""),
                                                str_field(req, "eos_token", ""));
        common_chat_templates_inputs inputs;
        server_inputs(req, tmpls.get(), inputs);
        const std::string prompt = common_chat_templates_apply(tmpls.get(), inputs).prompt;
        if (mdl != nullptr) {
            const std::vector<llama_token> toks = common_tokenize(llama_model_get_vocab(mdl), prompt,
                                                                  /* add_special */ true, /* parse_special */ true);
            *ids = static_cast<int32_t *>(std::malloc(sizeof(int32_t) * (toks.size() + 1)));
            if (*ids == nullptr) {
                throw std::bad_alloc();
            }
            std::memcpy(*ids, toks.data(), sizeof(int32_t) * toks.size());
            *n_ids = toks.size();
        }
        *text = copy_out(prompt);
        *text_len = prompt.size();
        return 0;
    } catch (const std::exception & e) {
        std::free(*ids);
        *ids = nullptr;
        *n_ids = 0;
        *error = copy_out(e.what());
        return 1;
    } catch (...) {
        std::free(*ids);
        *ids = nullptr;
        *n_ids = 0;
        *error = copy_out("the chat template threw a non-standard exception");
        return 1;
    }
}

}  // extern "C"
