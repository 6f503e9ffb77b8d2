
// coderun eval: the wire between a Java item's tests (T) and its solution
// (U), two programs compiled apart and run as two processes (see the eval
// package's documentation, "Compiled languages"). T's stub of the entry
// method writes its arguments on descriptor 4 and reads the answer on 3;
// U's main reads each call on its 3, calls the solution and writes the
// answer on its 4. Values are encoded and decoded by the method's declared
// (generic) types: an integer is its decimal digits and a space, a double
// or float its bits as an integer, a string its UTF-8 length, ':' and its
// bytes, a list, set or map its size and then its elements; a value of a
// reference type is preceded by '+', or is '-' for null; an Object carries
// a tag letter for its class. A call is its arguments and '\n'; an answer
// 'R', the value and '\n', or 'E', what the solution threw and '\n'.
// Anything else than a well-formed value of the declared type ends T
// (status 3) with a message, so that its tests fail.
final class CoderunWire {
    static final java.io.InputStream in;
    static final java.io.OutputStream out;
    static String peer = "the solution's process (during the tests)";
    static {
        try {
            in = new java.io.BufferedInputStream(new java.io.FileInputStream("/proc/self/fd/3"), 1 << 16);
            out = new java.io.BufferedOutputStream(new java.io.FileOutputStream("/proc/self/fd/4"), 1 << 16);
        } catch (java.io.IOException e) {
            throw fail("cannot open the wire: " + e);
        }
    }

    static RuntimeException fail(String why) {
        System.out.flush();
        System.err.println("\ncoderun eval: " + why);
        System.err.flush();
        Runtime.getRuntime().halt(3);
        return new IllegalStateException(why);
    }

    static int next() {
        int c;
        try {
            c = in.read();
        } catch (java.io.IOException e) {
            throw fail("reading from " + peer + ": " + e.getMessage());
        }
        if (c < 0) throw fail(peer + " ended");
        return c;
    }

    static boolean more() {
        try {
            in.mark(1);
            int c = in.read();
            in.reset();
            return c >= 0;
        } catch (java.io.IOException e) {
            throw fail("reading from " + peer + ": " + e.getMessage());
        }
    }

    static void expect(int want) {
        int c = next();
        if (c != want) throw fail(peer + " sent something else than a well-formed value (byte " + c + ", wanted " + (char) want + ")");
    }

    static void write(StringBuilder b) {
        try {
            out.write(b.toString().getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
            out.flush();
        } catch (java.io.IOException e) {
            throw fail(peer + " ended (writing to it: " + e.getMessage() + ")");
        }
    }

    static long integer(char end) {
        int c = next();
        boolean neg = c == '-';
        if (neg) c = next();
        java.math.BigInteger v = java.math.BigInteger.ZERO;
        int n = 0;
        for (; c >= '0' && c <= '9' && n < 30; c = next(), n++) v = v.multiply(java.math.BigInteger.TEN).add(java.math.BigInteger.valueOf(c - '0'));
        if (n == 0 || c != end) throw fail(peer + " sent something else than a well-formed value (a malformed integer)");
        if (neg) v = v.negate();
        if (v.bitLength() > 63) throw fail("an integer out of its type's range");
        return v.longValue();
    }

    static long ranged(long lo, long hi) {
        long v = integer(' ');
        if (v < lo || v > hi) throw fail("an integer out of its type's range");
        return v;
    }

    static int count() {
        return (int) ranged(0, Integer.MAX_VALUE - 8);
    }

    // put appends v, of type t, to b.
    static void put(StringBuilder b, java.lang.reflect.Type t, Object v) {
        if (t instanceof Class && ((Class<?>) t).isPrimitive()) {
            putPlain(b, (Class<?>) t, v);
            return;
        }
        if (v == null) {
            b.append('-');
            return;
        }
        b.append('+');
        Class<?> raw = rawOf(t);
        if (raw == Object.class) {
            putAny(b, v);
        } else if (raw == java.util.Optional.class) {
            java.util.Optional<?> o = (java.util.Optional<?>) v;
            b.append(o.isPresent() ? '1' : '0');
            if (o.isPresent()) put(b, arg(t, 0), o.get());
        } else if (java.util.Map.class.isAssignableFrom(raw)) {
            java.util.Map<?, ?> m = (java.util.Map<?, ?>) v;
            b.append(m.size()).append(' ');
            for (java.util.Map.Entry<?, ?> e : m.entrySet()) {
                put(b, arg(t, 0), e.getKey());
                put(b, arg(t, 1), e.getValue());
            }
        } else if (java.util.Collection.class.isAssignableFrom(raw)) {
            java.util.Collection<?> c = (java.util.Collection<?>) v;
            b.append(c.size()).append(' ');
            for (Object x : c) put(b, arg(t, 0), x);
        } else if (raw.isArray()) {
            int n = java.lang.reflect.Array.getLength(v);
            b.append(n).append(' ');
            java.lang.reflect.Type e = t instanceof java.lang.reflect.GenericArrayType ? ((java.lang.reflect.GenericArrayType) t).getGenericComponentType() : raw.getComponentType();
            for (int i = 0; i < n; i++) put(b, e, java.lang.reflect.Array.get(v, i));
        } else {
            putPlain(b, raw, v);
        }
    }

    static void putPlain(StringBuilder b, Class<?> c, Object v) {
        if (c == int.class || c == Integer.class || c == long.class || c == Long.class || c == short.class || c == Short.class || c == byte.class || c == Byte.class) {
            b.append(((Number) v).longValue()).append(' ');
        } else if (c == double.class || c == Double.class) {
            b.append(Double.doubleToRawLongBits((Double) v)).append(' ');
        } else if (c == float.class || c == Float.class) {
            b.append(Float.floatToRawIntBits((Float) v)).append(' ');
        } else if (c == boolean.class || c == Boolean.class) {
            b.append(((Boolean) v) ? 1 : 0).append(' ');
        } else if (c == char.class || c == Character.class) {
            b.append((int) (Character) v).append(' ');
        } else if (c == String.class) {
            byte[] s = ((String) v).getBytes(java.nio.charset.StandardCharsets.UTF_8);
            b.append(s.length).append(':').append(new String(s, java.nio.charset.StandardCharsets.ISO_8859_1));
        } else {
            throw fail("a " + c.getName() + " cannot cross between the processes");
        }
    }

    // putAny appends a value of a declared type Object: a tag, then the value.
    static void putAny(StringBuilder b, Object v) {
        java.lang.reflect.Type any = Object.class;
        if (v instanceof Integer) b.append('i');
        else if (v instanceof Long) b.append('l');
        else if (v instanceof Double) b.append('d');
        else if (v instanceof Float) b.append('f');
        else if (v instanceof Boolean) b.append('b');
        else if (v instanceof Character) b.append('c');
        else if (v instanceof String) b.append('s');
        else if (v instanceof java.util.List) b.append('L');
        else if (v instanceof java.util.Set) b.append('S');
        else if (v instanceof java.util.Map) b.append('M');
        else if (v instanceof java.util.Optional) b.append('O');
        else throw fail("a " + v.getClass().getName() + " cannot cross between the processes");
        if (v instanceof java.util.Collection || v instanceof java.util.Map || v instanceof java.util.Optional) {
            java.lang.reflect.Type t = v instanceof java.util.Map ? java.util.Map.class : v instanceof java.util.Optional ? java.util.Optional.class : java.util.List.class;
            put(b, t, v);
            return;
        }
        putPlain(b, v.getClass(), v);
    }

    static Object get(java.lang.reflect.Type t) {
        if (t instanceof Class && ((Class<?>) t).isPrimitive()) return getPlain((Class<?>) t);
        int c = next();
        if (c == '-') return null;
        if (c != '+') throw fail(peer + " sent something else than a well-formed value (byte " + c + ")");
        Class<?> raw = rawOf(t);
        if (raw == Object.class) return getAny();
        if (raw == java.util.Optional.class) {
            int p = next();
            if (p == '0') return java.util.Optional.empty();
            if (p != '1') throw fail(peer + " sent a malformed Optional");
            Object x = get(arg(t, 0));
            if (x == null) throw fail(peer + " sent an Optional of null");
            return java.util.Optional.of(x);
        }
        if (java.util.Map.class.isAssignableFrom(raw)) {
            int n = count();
            java.util.Map<Object, Object> m = raw.isAssignableFrom(java.util.LinkedHashMap.class) ? new java.util.LinkedHashMap<>() : java.util.SortedMap.class.isAssignableFrom(raw) ? new java.util.TreeMap<>() : new java.util.LinkedHashMap<>();
            for (int i = 0; i < n; i++) {
                Object k = get(arg(t, 0));
                m.put(k, get(arg(t, 1)));
            }
            return m;
        }
        if (java.util.Collection.class.isAssignableFrom(raw)) {
            int n = count();
            java.util.Collection<Object> l = java.util.Set.class.isAssignableFrom(raw) ? (java.util.SortedSet.class.isAssignableFrom(raw) ? new java.util.TreeSet<>() : new java.util.LinkedHashSet<>()) : new java.util.ArrayList<>();
            for (int i = 0; i < n; i++) l.add(get(arg(t, 0)));
            return l;
        }
        if (raw.isArray()) {
            int n = count();
            java.lang.reflect.Type e = t instanceof java.lang.reflect.GenericArrayType ? ((java.lang.reflect.GenericArrayType) t).getGenericComponentType() : raw.getComponentType();
            Object a = java.lang.reflect.Array.newInstance(rawOf(e), n);
            for (int i = 0; i < n; i++) java.lang.reflect.Array.set(a, i, get(e));
            return a;
        }
        return getPlain(raw);
    }

    static Object getPlain(Class<?> c) {
        if (c == int.class || c == Integer.class) return (int) ranged(Integer.MIN_VALUE, Integer.MAX_VALUE);
        if (c == long.class || c == Long.class) return integer(' ');
        if (c == short.class || c == Short.class) return (short) ranged(Short.MIN_VALUE, Short.MAX_VALUE);
        if (c == byte.class || c == Byte.class) return (byte) ranged(Byte.MIN_VALUE, Byte.MAX_VALUE);
        if (c == double.class || c == Double.class) return Double.longBitsToDouble(integer(' '));
        if (c == float.class || c == Float.class) return Float.intBitsToFloat((int) ranged(Integer.MIN_VALUE, Integer.MAX_VALUE));
        if (c == boolean.class || c == Boolean.class) return ranged(0, 1) == 1;
        if (c == char.class || c == Character.class) return (char) ranged(0, 0xFFFF);
        if (c == String.class) {
            long n = integer(':');
            if (n < 0 || n > Integer.MAX_VALUE - 8) throw fail("a string of a malformed length");
            java.io.ByteArrayOutputStream s = new java.io.ByteArrayOutputStream();
            for (long i = 0; i < n; i++) s.write(next());
            // Interned, as the literals the tests compare a returned
            // argument with by reference (==) are.
            return new String(s.toByteArray(), java.nio.charset.StandardCharsets.UTF_8).intern();
        }
        throw fail("a " + c.getName() + " cannot cross between the processes");
    }

    static Object getAny() {
        int tag = next();
        switch (tag) {
            case 'i': return getPlain(Integer.class);
            case 'l': return getPlain(Long.class);
            case 'd': return getPlain(Double.class);
            case 'f': return getPlain(Float.class);
            case 'b': return getPlain(Boolean.class);
            case 'c': return getPlain(Character.class);
            case 's': return getPlain(String.class);
            case 'L': return get(java.util.List.class);
            case 'S': return get(java.util.Set.class);
            case 'M': return get(java.util.Map.class);
            case 'O': return get(java.util.Optional.class);
        }
        throw fail(peer + " sent an Object of an unknown tag (byte " + tag + ")");
    }

    static Class<?> rawOf(java.lang.reflect.Type t) {
        if (t instanceof Class) return (Class<?>) t;
        if (t instanceof java.lang.reflect.ParameterizedType) return (Class<?>) ((java.lang.reflect.ParameterizedType) t).getRawType();
        if (t instanceof java.lang.reflect.GenericArrayType) return java.lang.reflect.Array.newInstance(rawOf(((java.lang.reflect.GenericArrayType) t).getGenericComponentType()), 0).getClass();
        if (t instanceof java.lang.reflect.WildcardType) return rawOf(((java.lang.reflect.WildcardType) t).getUpperBounds()[0]);
        return Object.class;
    }

    static java.lang.reflect.Type arg(java.lang.reflect.Type t, int i) {
        if (t instanceof java.lang.reflect.ParameterizedType) return ((java.lang.reflect.ParameterizedType) t).getActualTypeArguments()[i];
        return Object.class;
    }

    static java.lang.reflect.Method method(Class<?> c, String name) {
        for (java.lang.reflect.Method m : c.getDeclaredMethods()) if (m.getName().equals(name)) return m;
        throw fail("no method " + name);
    }

    // call is T's stub: it sends the arguments of sig's call and returns
    // the answer, of sig's return type.
    static Object call(java.lang.reflect.Method sig, Object... args) {
        StringBuilder b = new StringBuilder();
        java.lang.reflect.Type[] ps = sig.getGenericParameterTypes();
        for (int i = 0; i < ps.length; i++) put(b, ps[i], args[i]);
        b.append('\n');
        write(b);
        int kind = next();
        if (kind == 'E') {
            String what = (String) getPlain(String.class);
            throw fail("the solution threw " + what);
        }
        if (kind != 'R') throw fail(peer + " sent something else than an answer (byte " + kind + ")");
        Object r = get(sig.getGenericReturnType());
        expect('\n');
        return r;
    }

    // Serve is U's side: it decodes each call's arguments by sig's types,
    // has call answer it, and sends the answer.
    interface Call {
        Object apply(Object[] args) throws Throwable;
    }

    static void serve(java.lang.reflect.Method sig, Call call) {
        peer = "the tests' process";
        java.lang.reflect.Type[] ps = sig.getGenericParameterTypes();
        while (more()) {
            Object[] args = new Object[ps.length];
            for (int i = 0; i < ps.length; i++) args[i] = get(ps[i]);
            expect('\n');
            StringBuilder b = new StringBuilder();
            try {
                Object r = call.apply(args);
                b.append('R');
                put(b, sig.getGenericReturnType(), r);
            } catch (Throwable e) {
                b.setLength(0);
                b.append('E');
                putPlain(b, String.class, String.valueOf(e));
            }
            b.append('\n');
            write(b);
        }
        System.exit(0);
    }
}
