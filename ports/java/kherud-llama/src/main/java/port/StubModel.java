package port;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

/**
 * A loadable model around a vocab-only GGUF, because de.kherud:llama cannot load one.
 *
 * <p>The binding's only constructor, {@code new LlamaModel(ModelParameters)}, starts a
 * llama.cpp server context, and its parameters have no vocab_only switch: a vocab-only
 * GGUF (what llama.cpp ships in models/ and what the harness pins) fails with "missing
 * tensor 'token_embd.weight'". Its users always load a full model, whose tokenizer is the
 * same {@code tokenizer.ggml.*} metadata; so this writes that model: every key of the
 * vocab file copied byte for byte (tokens, scores, types, merges, pre, flags, names),
 * except the architecture, which becomes a 1-layer, 16-wide "llama" with all-zero F32
 * weights. Nothing the tokenizer reads changes, except {@code general.architecture}
 * (see the README: Serve only builds a stub after the library accepted the real
 * architecture and vocab, and failed on the missing weights alone).
 *
 * <p>Example: {@code StubModel.write(Path.of("ggml-vocab-qwen2.gguf"), Path.of("build/stubs"))}
 * returns {@code build/stubs/ggml-vocab-qwen2.gguf-<size>-<mtime>.stub.gguf}, written once.
 */
final class StubModel {
    static final int N_EMBD = 16, N_FF = 16, ALIGN = 32;
    private static final int T_U32 = 4, T_F32 = 6, T_STRING = 8, T_ARRAY = 9;

    /** Token count of a GGUF's {@code tokenizer.ggml.tokens} (the stub's n_vocab). */
    static int nTokens(Path gguf) throws IOException {
        return new Reader(gguf).nTokens;
    }

    /** The stub model for {@code vocab}, written once under {@code cacheDir} (atomically). */
    static Path write(Path vocab, Path cacheDir) throws IOException {
        Path out = cacheDir.resolve(vocab.getFileName() + "-" + Files.size(vocab) + "-"
                + Files.getLastModifiedTime(vocab).toMillis() + ".stub.gguf");
        if (Files.exists(out)) return out;
        Files.createDirectories(cacheDir);
        Reader r = new Reader(vocab);
        LE head = new LE();
        head.u32(0x46554747).u32(3);           // "GGUF", version 3
        String[][] tensors = tensors(r.nTokens);
        head.u64(tensors.length).u64(r.kept.size() + 7);
        for (ByteBuffer kv : r.kept) head.raw(kv);
        head.str("general.architecture").u32(T_STRING).str("llama");
        for (String[] kv : new String[][]{{"context_length", "512"}, {"embedding_length", "" + N_EMBD},
                {"block_count", "1"}, {"feed_forward_length", "" + N_FF}, {"attention.head_count", "1"}})
            head.str("llama." + kv[0]).u32(T_U32).u32(Integer.parseInt(kv[1]));
        head.str("llama.attention.layer_norm_rms_epsilon").u32(T_F32).f32(1e-5f);
        long offset = 0;
        for (String[] t : tensors) {          // name, ne0, ne1 (ne1 "" for a vector)
            head.str(t[0]).u32(t[2].isEmpty() ? 1 : 2).u64(Long.parseLong(t[1]));
            if (!t[2].isEmpty()) head.u64(Long.parseLong(t[2]));
            head.u32(0).u64(offset);          // type F32, offset in the data section
            offset += pad(4L * Long.parseLong(t[1]) * (t[2].isEmpty() ? 1 : Long.parseLong(t[2])));
        }
        byte[] header = head.bytes();
        Path tmp = Files.createTempFile(cacheDir, "stub", ".tmp");
        try (RandomAccessFile f = new RandomAccessFile(tmp.toFile(), "rw")) {
            f.write(header);
            f.setLength(pad(header.length) + offset);  // the zero weights: a sparse tail
        }
        return Files.move(tmp, out, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    /** The tensors llama.cpp's LLM_ARCH_LLAMA requires (output.weight is optional). */
    private static String[][] tensors(int nVocab) {
        String e = "" + N_EMBD, f = "" + N_FF;
        return new String[][]{{"token_embd.weight", e, "" + nVocab}, {"output_norm.weight", e, ""},
                {"blk.0.attn_norm.weight", e, ""}, {"blk.0.attn_q.weight", e, e}, {"blk.0.attn_k.weight", e, e},
                {"blk.0.attn_v.weight", e, e}, {"blk.0.attn_output.weight", e, e}, {"blk.0.ffn_norm.weight", e, ""},
                {"blk.0.ffn_gate.weight", e, f}, {"blk.0.ffn_down.weight", f, e}, {"blk.0.ffn_up.weight", e, f}};
    }

    private static long pad(long n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

    /** Walks a GGUF v2/v3 header: keeps each key-value's raw bytes, bar the architecture's own keys. */
    private static final class Reader {
        final List<ByteBuffer> kept = new ArrayList<>();
        int nTokens = -1;
        private final ByteBuffer b;
        private final Path path;

        Reader(Path path) throws IOException {
            this.path = path;
            try (FileChannel ch = FileChannel.open(path)) {
                b = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size()).order(ByteOrder.LITTLE_ENDIAN);
            }
            try {
                if (b.getInt() != 0x46554747) throw bad("no GGUF magic at offset 0");
                int version = b.getInt();
                if (version < 2) throw bad("GGUF version " + version + " (only 2 and 3 are read)");
                b.getLong();                  // tensor count: a vocab-only file has none we keep
                long nKv = b.getLong();
                String arch = null;
                List<String> keys = new ArrayList<>();
                for (long i = 0; i < nKv; i++) {
                    int start = b.position();
                    String key = str();
                    int type = b.getInt();
                    if (key.equals("general.architecture") && type == T_STRING) {
                        arch = str();
                        continue;             // replaced by "llama"
                    }
                    if (key.equals("tokenizer.ggml.tokens") && type == T_ARRAY) {
                        int at = b.position();
                        b.getInt();
                        nTokens = Math.toIntExact(b.getLong());
                        b.position(at);
                    }
                    skip(type);
                    keys.add(key);
                    kept.add(b.duplicate().position(start).limit(b.position()).slice());
                }
                // The old architecture's hyper-parameters (and the alignment) describe
                // weights the stub does not have: drop them, the stub writes its own.
                for (int i = keys.size() - 1; i >= 0; i--) {
                    String key = keys.get(i);
                    if ((arch != null && key.startsWith(arch + ".")) || key.startsWith("llama.")
                            || key.equals("general.alignment")) kept.remove(i);
                }
            } catch (RuntimeException e) {
                throw bad("truncated or malformed header (" + e + ")");
            }
            if (nTokens <= 0) throw bad("no tokenizer.ggml.tokens array");
        }

        private IOException bad(String what) {
            return new IOException(path + ": " + what + " at byte " + b.position()
                    + "; pass a llama.cpp GGUF vocab (e.g. models/ggml-vocab-*.gguf)");
        }

        private String str() {
            byte[] s = new byte[Math.toIntExact(b.getLong())];
            b.get(s);
            return new String(s, StandardCharsets.UTF_8);
        }

        private void skip(int type) {
            switch (type) {
                case 0, 1, 7 -> b.position(b.position() + 1);
                case 2, 3 -> b.position(b.position() + 2);
                case 4, 5, 6 -> b.position(b.position() + 4);
                case 10, 11, 12 -> b.position(b.position() + 8);
                case T_STRING -> {
                    int n = Math.toIntExact(b.getLong());  // read first: it moves the position
                    b.position(b.position() + n);
                }
                case T_ARRAY -> {
                    int itemType = b.getInt();
                    long n = b.getLong();
                    for (long i = 0; i < n; i++) skip(itemType);
                }
                default -> throw new IllegalStateException("unknown GGUF value type " + type);
            }
        }
    }

    /** A little-endian byte builder (GGUF is little-endian; DataOutputStream is not). */
    private static final class LE {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();
        private final ByteBuffer word = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);

        LE u32(int v) { out.write(word.clear().putInt(v).array(), 0, 4); return this; }
        LE u64(long v) { out.write(word.clear().putLong(v).array(), 0, 8); return this; }
        LE f32(float v) { out.write(word.clear().putFloat(v).array(), 0, 4); return this; }
        LE str(String s) {
            byte[] u = s.getBytes(StandardCharsets.UTF_8);
            u64(u.length);
            out.write(u, 0, u.length);
            return this;
        }
        LE raw(ByteBuffer kv) {
            byte[] a = new byte[kv.remaining()];
            kv.duplicate().get(a);
            out.write(a, 0, a.length);
            return this;
        }
        byte[] bytes() { return out.toByteArray(); }
    }
}
