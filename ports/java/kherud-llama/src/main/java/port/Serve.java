package port;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import de.kherud.llama.LlamaModel;
import de.kherud.llama.ModelParameters;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;

/**
 * de.kherud:llama behind the conformance harness's JSON-lines protocol.
 *
 * <p>Run: {@code serve --vocab ggml-vocab-qwen2.gguf}, then one request per stdin line:
 * {@code {"op":"encode","text":"Hello","add_special":false,"parse_special":true}} answers
 * {@code {"ids":[9707]}}. The binding's public tokenizer API is two calls, and the adapter
 * uses nothing else:
 * <ul>
 * <li>{@code int[] LlamaModel.encode(String)}: llama.cpp's tokenizer with add_special=false,
 *     parse_special=true, fixed in the native code; the other flag values are unsupported.
 * <li>{@code String LlamaModel.decode(int[])}: each id's piece (special=true) concatenated,
 *     then {@code new String(bytes, UTF_8)}; so decode is remove_special=false,
 *     unparse_special=true, and a one-id decode is the piece with special=true.
 * </ul>
 */
public final class Serve {
    /** The llama.cpp the jar's Linux/x86_64/libjllama.so was built from (its LLAMA_BUILD_NUMBER, LLAMA_COMMIT). */
    static final String LLAMA_CPP = "b4916 (c6af2161)";
    static final String LIBRARY = "de.kherud:llama 4.2.0";
    static final int MAX_LINE = 64 << 20;
    static final List<String> UNSUPPORTED = List.of("add_special=true", "parse_special=false",
            "remove_special=true", "unparse_special=false", "special=false");

    private static final Gson GSON = new GsonBuilder().disableHtmlEscaping().create();
    private static final Path LOG = Path.of(System.getProperty("port.log", "/dev/null"));

    private final LlamaModel model;     // null when the library could not load the vocab
    private final String loadError;     // why, in the library's words
    private final int nVocab;

    private Serve(LlamaModel model, String loadError, int nVocab) {
        this.model = model;
        this.loadError = loadError;
        this.nVocab = nVocab;
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 2 || !args[0].equals("--vocab")) {
            System.err.println("usage: serve --vocab PATH.gguf");
            System.exit(2);
        }
        // The protocol owns stdout. `serve` hands us the real stdout as fd 3 (port.out) and points
        // fd 1 at stderr, so nothing llama.cpp's C code prints can reach the harness.
        String outPath = System.getProperty("port.out");
        // Append mode: reopening /dev/fd/3 on a regular file would otherwise write from offset 0.
        OutputStream raw = outPath == null ? new FileOutputStream(java.io.FileDescriptor.out) : new FileOutputStream(outPath, true);
        PrintStream out = new PrintStream(raw, false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        LOG.toFile().deleteOnExit();
        Serve server = load(Path.of(args[1]), Path.of(System.getProperty("port.cache", "build/stubs")));
        InputStream in = new BufferedInputStream(System.in, 1 << 16);
        for (byte[] line; (line = readLine(in)) != null; ) {
            out.print(GSON.toJson(server.answer(line)));
            out.print('\n');
            out.flush();
        }
        // EOF: the harness is done. exit() rather than return: the binding's server context
        // keeps a non-daemon task thread alive.
        System.exit(0);
    }

    /** Loads the vocab the way users load a model; a vocab-only file gets a stub model (StubModel). */
    static Serve load(Path vocab, Path cacheDir) {
        int nVocab;
        try {
            nVocab = StubModel.nTokens(vocab);
        } catch (IOException e) {
            return new Serve(null, e.getMessage(), 0);
        }
        // First the file itself: a full model loads as is, and otherwise the library gives its
        // own verdict on the architecture and vocab (an unknown pre-tokenizer fails here).
        long logStart = logSize();
        try {
            return new Serve(new LlamaModel(params(vocab)), null, nVocab);
        } catch (RuntimeException e) {  // de.kherud.llama.LlamaException is package-private
            String why = e.getMessage() + ": " + logErrors(logStart);
            if (!why.contains("missing tensor")) return new Serve(null, why, nVocab);
        }
        // Only the weights were missing: load the same vocab inside a stub model.
        try {
            Path stub = StubModel.write(vocab, cacheDir);
            logStart = logSize();
            return new Serve(new LlamaModel(params(stub)), null, nVocab);
        } catch (IOException e) {
            return new Serve(null, "cannot write the stub model: " + e.getMessage(), nVocab);
        } catch (RuntimeException e) {
            return new Serve(null, e.getMessage() + ": " + logErrors(logStart), nVocab);
        }
    }

    private static long logSize() {
        try {
            return Files.size(LOG);
        } catch (IOException e) {
            return 0;
        }
    }

    /**
     * llama.cpp's error lines logged since byte {@code from} of the stderr copy, e.g.
     * "llama_model_load: error loading model: error loading model vocabulary: unknown
     * pre-tokenizer type: 'gemma4'". The copy runs through `tee`, so wait (up to 3 s) for the
     * server's closing "failed to load model" line.
     */
    private static String logErrors(long from) {
        StringBuilder found = new StringBuilder();
        for (int tries = 0; tries < 30; tries++) {
            found.setLength(0);
            try (RandomAccessFile f = new RandomAccessFile(LOG.toFile(), "r")) {
                f.seek(Math.min(from, f.length()));
                byte[] tail = new byte[(int) Math.min(f.length() - f.getFilePointer(), 1 << 20)];
                f.readFully(tail);
                String text = new String(tail, StandardCharsets.UTF_8);
                for (String line : text.split("\n"))
                    if (line.contains("error")) found.append(line.strip()).append("; ");
                if (text.contains("load_model: failed")) break;
            } catch (IOException e) {
                return "(no log: " + e.getMessage() + ")";
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                break;
            }
        }
        return found.toString();
    }

    private static ModelParameters params(Path gguf) {
        // skipWarmup: the stub's zero weights would only burn a forward pass; tokenizing is unaffected.
        return new ModelParameters().setModel(gguf.toString()).setThreads(1).skipWarmup();
    }

    /** One answer per line, whatever the line holds. */
    JsonObject answer(byte[] line) {
        if (line.length > MAX_LINE) return error("request line over " + MAX_LINE + " bytes");
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(line)).toString();
        } catch (CharacterCodingException e) {
            return error("request line is not UTF-8: send JSON text (escape raw bytes as text_hex)");
        }
        if (text.isBlank()) return error("empty request line: send one JSON object per line");
        try {
            return handle(JsonParser.parseString(text), true);
        } catch (StackOverflowError | RuntimeException e) {
            return error("bad request: " + e);
        }
    }

    private JsonObject handle(JsonElement request, boolean topLevel) {
        if (!request.isJsonObject()) return error("a request must be a JSON object, got " + request);
        JsonObject req = request.getAsJsonObject();
        if (model == null) return error("unsupported: " + LIBRARY + " cannot load the vocab: " + loadError);
        String op = req.has("op") ? req.get("op").getAsString() : "";
        JsonObject res = new JsonObject();
        switch (op) {
            case "info" -> {
                res.addProperty("n_vocab", nVocab);
                res.addProperty("batch", true);
                res.add("unsupported", GSON.toJsonTree(UNSUPPORTED));
                res.addProperty("library", LIBRARY);
                res.addProperty("llama_cpp", LLAMA_CPP);
            }
            case "encode" -> {
                if (flag(req, "add_special") || !flag(req, "parse_special"))
                    return error("unsupported: LlamaModel.encode always uses add_special=false, parse_special=true");
                String text = req.has("text_hex") ? utf8(HexFormat.of().parseHex(req.get("text_hex").getAsString()))
                        : req.get("text").getAsString();
                if (text == null) return error("unsupported: LlamaModel.encode takes a String; invalid UTF-8 has none");
                res.add("ids", GSON.toJsonTree(model.encode(text)));
            }
            case "decode", "piece" -> {
                boolean decode = op.equals("decode");
                if (decode ? flag(req, "remove_special") || !flag(req, "unparse_special") : !flag(req, "special"))
                    return error("unsupported: LlamaModel.decode keeps and renders special tokens");
                int[] ids = decode ? GSON.fromJson(req.get("ids"), int[].class) : new int[]{req.get("id").getAsInt()};
                for (int id : ids)  // an out-of-range id throws std::out_of_range in C++, which aborts the JVM
                    if (id < 0 || id >= nVocab) return error("id " + id + " is not in [0, " + nVocab + ")");
                res.addProperty("bytes_hex", HexFormat.of().formatHex(model.decode(ids).getBytes(StandardCharsets.UTF_8)));
            }
            case "batch" -> {
                if (!topLevel) return error("a batch cannot hold a batch");
                JsonArray answers = new JsonArray();
                for (JsonElement r : req.getAsJsonArray("requests")) answers.add(handle(r, false));
                res.add("responses", answers);
            }
            default -> { return error("unknown op " + req.get("op") + ": use info, encode, decode, piece or batch"); }
        }
        return res;
    }

    private static boolean flag(JsonObject req, String name) {
        JsonElement v = req.get(name);
        if (v == null || !v.isJsonPrimitive() || !v.getAsJsonPrimitive().isBoolean())
            throw new IllegalArgumentException("'" + name + "' must be true or false");
        return v.getAsBoolean();
    }

    private static String utf8(byte[] bytes) {
        try {
            return StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    private static JsonObject error(String message) {
        JsonObject e = new JsonObject();
        e.addProperty("error", message);
        return e;
    }

    /** The next line's bytes without its newline (null at EOF); over MAX_LINE it keeps MAX_LINE + 1. */
    private static byte[] readLine(InputStream in) throws IOException {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) != -1 && c != '\n')
            if (buf.size() <= MAX_LINE) buf.write(c);
        return c == -1 && buf.size() == 0 ? null : buf.toByteArray();
    }
}
