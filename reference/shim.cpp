// A tiny, stable C ABI over the pinned libllama, for reference/inproc.py.
//
// Why a shim instead of ctypes over llama.h directly: loading a model needs
// `struct llama_model_params` by value, and hand-copying that layout into
// Python breaks silently when the pin moves. Compiled against the pinned
// headers, this file gets the layout from the compiler. Everything it exports
// takes only scalars and pointers.
//
// Why C++: llama.cpp throws C++ exceptions from some tokenizer paths (for
// example std::out_of_range for a byte missing from an SPM vocab). Thrown
// through a C boundary into Python they would abort the interpreter; here
// they become an error code plus a message the adapter raises.

#include "llama.h"
#include "llama-vocab.h"  // src/: llama_vocab's C++ overloads (ref_detokenize_cxx, ref_cached_piece)

#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <vector>

namespace {

std::mutex g_mutex;
std::string g_log;    // llama.cpp's log lines since the last ref_take_log()
std::string g_error;  // the last exception message

void capture_log(enum ggml_log_level level, const char * text, void * /*user_data*/) {
    // The oracle must be silent on stderr (xdist workers, CLI output), but a
    // failed load must still explain itself: keep warnings and errors.
    if (level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_CONT) {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (g_log.size() < (1u << 20)) {
            g_log += text;
        }
    }
}

void remember(const char * what) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_error = what;
}

}  // namespace

extern "C" {

// Returns the captured log (and clears it). The pointer is valid until the next call.
const char * ref_take_log(void) {
    static std::string out;
    std::lock_guard<std::mutex> lock(g_mutex);
    out.swap(g_log);
    g_log.clear();
    return out.c_str();
}

const char * ref_last_error(void) {
    static std::string out;
    std::lock_guard<std::mutex> lock(g_mutex);
    out = g_error;
    return out.c_str();
}

void ref_init(void) {
    llama_log_set(capture_log, nullptr);
    llama_backend_init();
}

// Loads only the vocabulary (no tensors). NULL on failure: see ref_take_log().
void * ref_load_vocab_only(const char * path) {
    try {
        llama_model_params params = llama_model_default_params();
        params.vocab_only = true;
        return llama_model_load_from_file(path, params);
    } catch (const std::exception & e) {
        remember(e.what());
        return nullptr;
    }
}

void ref_free(void * model) {
    llama_model_free(static_cast<llama_model *>(model));
}

const void * ref_vocab(const void * model) {
    return llama_model_get_vocab(static_cast<const llama_model *>(model));
}

int32_t ref_n_vocab(const void * vocab) {
    return llama_vocab_n_tokens(static_cast<const llama_vocab *>(vocab));
}

// llama-tokenize passes add_special = add_bos && !--no-bos; the CLI adapter's
// tests need the model's add_bos to know what the CLI can express.
int ref_add_bos(const void * vocab) {
    return llama_vocab_get_add_bos(static_cast<const llama_vocab *>(vocab)) ? 1 : 0;
}

int ref_add_eos(const void * vocab) {
    return llama_vocab_get_add_eos(static_cast<const llama_vocab *>(vocab)) ? 1 : 0;
}

// The three calls return what llama.cpp returns; INT32_MIN + 1 flags an exception.
static const int32_t REF_EXCEPTION = INT32_MIN + 1;

int32_t ref_exception_code(void) { return REF_EXCEPTION; }

int32_t ref_tokenize(const void * vocab, const char * text, int32_t text_len,
                     int32_t * tokens, int32_t n_tokens_max, int add_special, int parse_special) {
    try {
        return llama_tokenize(static_cast<const llama_vocab *>(vocab), text, text_len,
                              tokens, n_tokens_max, add_special != 0, parse_special != 0);
    } catch (const std::exception & e) {
        remember(e.what());
        return REF_EXCEPTION;
    }
}

int32_t ref_detokenize(const void * vocab, const int32_t * tokens, int32_t n_tokens,
                       char * text, int32_t text_len_max, int remove_special, int unparse_special) {
    try {
        return llama_detokenize(static_cast<const llama_vocab *>(vocab), tokens, n_tokens,
                                text, text_len_max, remove_special != 0, unparse_special != 0);
    } catch (const std::exception & e) {
        remember(e.what());
        return REF_EXCEPTION;
    }
}

int32_t ref_token_to_piece(const void * vocab, int32_t token, char * buf, int32_t length,
                           int32_t lstrip, int special) {
    try {
        return llama_token_to_piece(static_cast<const llama_vocab *>(vocab), token, buf, length,
                                    lstrip, special != 0);
    } catch (const std::exception & e) {
        remember(e.what());
        return REF_EXCEPTION;
    }
}

// llama_vocab's C++ overloads, which llama.cpp's own code calls instead of the C API:
// detokenize(tokens, special), with its own resize loop (the DRY sampler's), and
// token_to_piece(token), the piece cached at load (the grammar's). The crosscheck holds
// them to the C API; both return what they return, copied, or -size when buf is too small.
int32_t ref_detokenize_cxx(const void * vocab, const int32_t * tokens, int32_t n_tokens,
                           char * text, int32_t text_len_max, int special) {
    try {
        const std::string out = static_cast<const llama_vocab *>(vocab)->detokenize(
            std::vector<llama_token>(tokens, tokens + n_tokens), special != 0);
        if ((int64_t) out.size() > text_len_max) {
            return -(int32_t) out.size();
        }
        memcpy(text, out.data(), out.size());
        return (int32_t) out.size();
    } catch (const std::exception & e) {
        remember(e.what());
        return REF_EXCEPTION;
    }
}

int32_t ref_cached_piece(const void * vocab, int32_t token, char * buf, int32_t length) {
    try {
        const std::string & piece = static_cast<const llama_vocab *>(vocab)->token_to_piece(token);
        if ((int64_t) piece.size() > length) {
            return -(int32_t) piece.size();
        }
        memcpy(buf, piece.data(), piece.size());
        return (int32_t) piece.size();
    } catch (const std::exception & e) {
        remember(e.what());
        return REF_EXCEPTION;
    }
}

}  // extern "C"
