package port;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonObject;
import de.kherud.llama.LlamaModel;
import de.kherud.llama.ModelParameters;

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Map;

/**
 * The direct program (README "## Adapter check"): the harness's encode, decode and piece
 * requests answered by calling de.kherud:llama literally as its README and LlamaModel's
 * Javadoc show, sharing no code with {@link Serve}:
 * {@code new LlamaModel(new ModelParameters().setModel(path))}, {@code model.encode(text)},
 * {@code model.decode(ids)}. The file given is loaded as it is: the binding has no
 * vocab-only switch, so a vocab-only GGUF fails to load ("missing tensor"), and then every
 * request is answered unsupported.
 *
 * <p>Run through {@code direct --vocab PATH.gguf}, which hands the protocol fd 3 (port.out).
 */
public final class Direct {
    private static final Gson GSON = new GsonBuilder().disableHtmlEscaping().create();

    public static void main(String[] args) throws IOException {
        PrintStream out = new PrintStream(new FileOutputStream(System.getProperty("port.out", "/dev/stdout"), true),
                false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        LlamaModel model = null;
        String loadError = null;
        try {
            model = new LlamaModel(new ModelParameters().setModel(args[1]));
        } catch (RuntimeException e) {
            loadError = String.valueOf(e.getMessage());
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            Object answer;
            try {
                answer = answer(model, loadError, GSON.fromJson(line, JsonObject.class));
            } catch (RuntimeException e) {
                answer = Map.of("error", String.valueOf(e));
            }
            out.print(GSON.toJson(answer));
            out.print('\n');
            out.flush();
        }
        System.exit(0); // the binding's server context keeps a non-daemon thread alive
    }

    static Object answer(LlamaModel model, String loadError, JsonObject r) {
        if (model == null) return Map.of("error", "unsupported: new LlamaModel(...) failed: " + loadError);
        String op = r.get("op").getAsString();
        if (op.equals("encode") && !r.get("add_special").getAsBoolean() && r.get("parse_special").getAsBoolean()) {
            String text = r.has("text") ? r.get("text").getAsString() : utf8(HexFormat.of().parseHex(r.get("text_hex").getAsString()));
            if (text == null) return Map.of("error", "unsupported: encode(String) takes no invalid UTF-8");
            return Map.of("ids", model.encode(text));
        }
        if (op.equals("decode") && !r.get("remove_special").getAsBoolean() && r.get("unparse_special").getAsBoolean())
            return Map.of("bytes_hex", hex(model.decode(GSON.fromJson(r.get("ids"), int[].class))));
        if (op.equals("piece") && r.get("special").getAsBoolean())
            return Map.of("bytes_hex", hex(model.decode(new int[]{r.get("id").getAsInt()})));
        return Map.of("error", "unsupported: not expressible with encode(String) / decode(int[])");
    }

    private static String hex(String s) {
        return HexFormat.of().formatHex(s.getBytes(StandardCharsets.UTF_8));
    }

    private static String utf8(byte[] b) {
        try {
            return StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(b)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }
}
