package port;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import de.kherud.llama.InferenceParameters;
import de.kherud.llama.LlamaModel;
import de.kherud.llama.ModelParameters;
import de.kherud.llama.Pair;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * de.kherud:llama's chat template API as the port's chat program: {@code chat --vocab V}.
 *
 * <p>Answers the protocol's {@code chat} op (harness/protocol/chat.py) with the binding's
 * documented calls and nothing else (README "## Chat"):
 * <ul>
 * <li>{@code new LlamaModel(new ModelParameters().setModel(path)...)}, with {@code enableJinja()}
 *     unless the request asks for llama.cpp's built-in formats ({@code builtin}), and
 *     {@code setChatTemplate(template)} for a request's own template;
 * <li>{@code model.applyTemplate(new InferenceParameters("").setMessages(system, pairs))}: the
 *     binding's native applyTemplate, llama-server's oaicompat_completion_params_parse at its
 *     bundled llama.cpp (b4916), returning the "prompt";
 * <li>{@code model.encode(prompt)}: the binding's tokenizer (add_special=false, parse_special=true).
 * </ul>
 * {@code setMessages(String system, List<Pair<String, String>>)} takes one system text and
 * (role, content) pairs whose role is "user" or "assistant": tools, tool calls, tool messages,
 * template kwargs and add_generation_prompt=false have no counterpart and answer unsupported.
 */
public final class Chat {
    static final String LIBRARY = "de.kherud:llama 4.2.0 applyTemplate";
    private static final Gson GSON = new GsonBuilder().disableHtmlEscaping().create();

    private final Path vocab, cacheDir;
    private final int nVocab;
    private final Map<String, LlamaModel> models = new HashMap<>();  // (builtin, template) -> model
    private String loadError;

    private Chat(Path vocab, Path cacheDir, int nVocab, String loadError) {
        this.vocab = vocab;
        this.cacheDir = cacheDir;
        this.nVocab = nVocab;
        this.loadError = loadError;
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 2 || !args[0].equals("--vocab")) {
            System.err.println("usage: chat --vocab PATH.gguf");
            System.exit(2);
        }
        String outPath = System.getProperty("port.out");
        OutputStream raw = outPath == null ? new FileOutputStream(java.io.FileDescriptor.out) : new FileOutputStream(outPath, true);
        PrintStream out = new PrintStream(raw, false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        Path.of(System.getProperty("port.log", "/dev/null")).toFile().deleteOnExit();  // chat's stderr copy
        Path vocab = Path.of(args[1]);
        int n = 0;
        String err = null;
        try {
            n = StubModel.nTokens(vocab);
        } catch (IOException e) {
            err = e.getMessage();
        }
        Chat chat = new Chat(vocab, Path.of(System.getProperty("port.cache", "build/stubs")), n, err);
        InputStream in = new BufferedInputStream(System.in, 1 << 16);
        for (byte[] line; (line = readLine(in)) != null; ) {
            out.print(GSON.toJson(chat.answer(line)));
            out.print('\n');
            out.flush();
        }
        System.exit(0);  // the binding's server context keeps a non-daemon thread alive
    }

    /** The model for these settings, loaded as serve loads it (the vocab, else its stub model). */
    private LlamaModel model(boolean builtin, String template) {
        String key = builtin + "\n" + template;
        LlamaModel m = models.get(key);
        if (m != null) return m;
        RuntimeException first;
        try {
            m = new LlamaModel(params(vocab, builtin, template));
        } catch (RuntimeException e) {  // a vocab-only GGUF: "missing tensor" (see StubModel)
            first = e;
            try {
                m = new LlamaModel(params(StubModel.write(vocab, cacheDir), builtin, template));
            } catch (IOException | RuntimeException e2) {
                throw new IllegalStateException(first.getMessage() + "; stub model: " + e2.getMessage());
            }
        }
        models.put(key, m);
        return m;
    }

    private static ModelParameters params(Path gguf, boolean builtin, String template) {
        ModelParameters p = new ModelParameters().setModel(gguf.toString()).setThreads(1).skipWarmup();
        if (!builtin) p.enableJinja();
        if (template != null) p.setChatTemplate(template);
        return p;
    }

    JsonObject answer(byte[] line) {
        try {
            return handle(JsonParser.parseString(new String(line, StandardCharsets.UTF_8)), true);
        } catch (StackOverflowError | RuntimeException e) {
            return error("bad request: " + e);
        }
    }

    private JsonObject handle(JsonElement request, boolean topLevel) {
        if (!request.isJsonObject()) return error("a request must be a JSON object, got " + request);
        JsonObject req = request.getAsJsonObject();
        if (loadError != null) return error("unsupported: " + LIBRARY + " cannot load the vocab: " + loadError);
        String op = req.has("op") ? req.get("op").getAsString() : "";
        switch (op) {
            case "info" -> {
                JsonObject res = new JsonObject();
                res.addProperty("n_vocab", nVocab);
                res.addProperty("batch", true);
                res.addProperty("library", LIBRARY);
                res.addProperty("llama_cpp", Serve.LLAMA_CPP);
                return res;
            }
            case "chat" -> { return chat(req); }
            case "encode", "decode", "piece" -> {
                return error("unsupported: the chat program answers chat only (serve answers the tokenizer ops)");
            }
            case "batch" -> {
                if (!topLevel) return error("a batch cannot hold a batch");
                JsonArray answers = new JsonArray();
                for (JsonElement r : req.getAsJsonArray("requests")) answers.add(handle(r, false));
                JsonObject res = new JsonObject();
                res.add("responses", answers);
                return res;
            }
            default -> { return error("unknown op " + req.get("op") + ": use info, chat or batch"); }
        }
    }

    private JsonObject chat(JsonObject req) {
        boolean builtin = req.has("builtin") && req.get("builtin").getAsBoolean();
        String template = req.has("template") && !req.get("template").isJsonNull() ? req.get("template").getAsString() : null;
        if (req.has("tools") && !req.get("tools").isJsonNull())
            return error("unsupported: tools: InferenceParameters has no tools parameter");
        if (req.has("kwargs") && req.getAsJsonObject("kwargs").size() > 0)
            return error("unsupported: template kwargs: InferenceParameters has no chat_template_kwargs");
        if (!(req.has("add_generation_prompt") && req.get("add_generation_prompt").getAsBoolean()))
            return error("unsupported: add_generation_prompt=false: InferenceParameters has no such parameter (the native parse always adds it)");
        // setMessages(system, pairs): one system text first, then (role, content) pairs.
        String system = "";
        List<Pair<String, String>> pairs = new ArrayList<>();
        JsonArray messages = req.getAsJsonArray("messages");
        for (int i = 0; i < messages.size(); i++) {
            JsonObject m = messages.get(i).getAsJsonObject();
            String role = m.get("role").getAsString();
            if (m.has("tool_calls")) return error("unsupported: tool_calls: setMessages takes (role, content) pairs");
            JsonElement content = m.get("content");
            if (content == null || !content.isJsonPrimitive() || !content.getAsJsonPrimitive().isString())
                return error("unsupported: a message whose content is not a string");
            if (role.equals("system") && i == 0) system = content.getAsString();
            else if (role.equals("user") || role.equals("assistant")) pairs.add(new Pair<>(role, content.getAsString()));
            else return error("unsupported: role " + role + (role.equals("system") ? " after the first message" : "")
                    + ": setMessages takes one system text and user/assistant pairs");
        }
        LlamaModel model;
        try {
            model = model(builtin, template);
        } catch (RuntimeException e) {
            loadError = e.getMessage();
            return error("unsupported: " + LIBRARY + " cannot load the vocab: " + loadError);
        }
        String prompt;
        try {
            prompt = model.applyTemplate(new InferenceParameters("").setMessages(system, pairs));
        } catch (RuntimeException e) {  // the native side's exception: the template raised
            JsonObject res = new JsonObject();
            res.addProperty("raised", e.getClass().getSimpleName() + ": " + e.getMessage());
            return res;
        }
        JsonObject res = new JsonObject();
        res.addProperty("text", prompt);
        res.add("ids", GSON.toJsonTree(model.encode(prompt)));
        return res;
    }

    private static JsonObject error(String message) {
        JsonObject e = new JsonObject();
        e.addProperty("error", message);
        return e;
    }

    private static byte[] readLine(InputStream in) throws IOException {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) != -1 && c != '\n') buf.write(c);
        return c == -1 && buf.size() == 0 ? null : buf.toByteArray();
    }
}
