// coderun eval: the wire between a C++ item's tests (T) and its solution (U),
// two programs compiled apart and run as two processes (see the eval
// package's documentation, "Compiled languages"). T calls the entry function
// through a stub that writes its arguments on descriptor 4 and reads the
// answer on descriptor 3; U's main reads each call on its descriptor 3,
// calls the solution and writes the answer on its descriptor 4. Values are
// decoded by the static type the entry function's declaration gives them,
// and anything else than a well-formed value of that type ends T with a
// message (status 3), so that its tests fail.
//
// Encoding: an integer is its decimal digits and a space; a float or a
// double its bits as an unsigned integer; a string its length, ':' and its
// bytes; a sequence its length then its elements; a map its size then keys
// and values; a pair its two values; a boost::any a tag letter and its value.
// A call is its arguments and '\n'; an answer 'R', the value and '\n', or 'E',
// a string (what the solution threw) and '\n'.
//
// It is placed after the prompt's includes and has the overloads of the
// types they declared only (a declaration uses no other), and it includes
// no header of its own but C's and light ones, so that the two programs
// compile hardly slower than the prompt alone (<string> alone would cost
// each half a second of CPU).
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <type_traits>
#include <unistd.h>
#ifdef CODERUN_WIRE_BOOST
#include <typeinfo>
#include <boost/any.hpp>
#endif

namespace coderun_wire {

[[noreturn]] inline void fail(const char* a, const char* b = "", const char* c = "") {
  char m[1024];
  int n = snprintf(m, sizeof m, "\ncoderun eval: %s%s%s\n", a, b, c);
  if (n > 0) {
    ssize_t w = write(2, m, size_t(n) < sizeof m ? size_t(n) : sizeof m - 1);
    (void)w;
  }
  _exit(3);
}

struct In {
  int fd;
  const char* peer;
  char buf[1 << 16];
  size_t pos = 0, len = 0;
  In(int f, const char* p) : fd(f), peer(p) {}
  bool fill() {
    ssize_t n;
    do n = read(fd, buf, sizeof buf); while (n < 0 && errno == EINTR);
    if (n < 0) fail("reading from ", peer, strerror(errno));
    pos = 0, len = size_t(n);
    return n > 0;
  }
  // more says whether another message comes (false at the end of input).
  bool more() { return pos < len || fill(); }
  int next() {
    if (pos == len && !fill()) fail(peer, " ended");
    return (unsigned char)buf[pos++];
  }
  void expect(char c) {
    if (next() != c) fail(peer, " sent something else than a well-formed value (a stray byte)");
  }
  // digits reads [-]digits up to end (' ' or ':') into magnitude and sign.
  void digits(bool& neg, unsigned long long& mag, char end) {
    neg = false, mag = 0;
    int c = next();
    if (c == '-') neg = true, c = next();
    int n = 0;
    for (; c >= '0' && c <= '9'; c = next(), n++) {
      if (mag > (std::numeric_limits<unsigned long long>::max() - 9) / 10) fail("an integer out of range on the wire");
      mag = mag * 10 + (c - '0');
    }
    if (n == 0 || c != end) fail(peer, " sent something else than a well-formed value (a malformed integer)");
  }
  template <class I> I integer() {
    bool neg;
    unsigned long long mag;
    digits(neg, mag, ' ');
    if (std::is_unsigned<I>::value) {
      if (neg && mag != 0) fail("a negative value for an unsigned type");
      if (mag > (unsigned long long)std::numeric_limits<I>::max()) fail("an integer out of its type's range");
      return I(mag);
    }
    long long lo = (long long)std::numeric_limits<I>::min(), hi = (long long)std::numeric_limits<I>::max();
    if (!neg && mag > (unsigned long long)hi) fail("an integer out of its type's range");
    if (neg && mag > (unsigned long long)hi + 1) fail("an integer out of its type's range");
    long long v = neg ? (long long)(0 - mag) : (long long)mag;
    if (v < lo) fail("an integer out of its type's range");
    return I(v);
  }
  size_t count() {
    unsigned long long n = integer<unsigned long long>();
    if (n > (1ull << 31)) fail("a length too long for the wire");
    return size_t(n);
  }
  // length reads a string's length (up to its ':').
  size_t length() {
    bool neg;
    unsigned long long n;
    digits(neg, n, ':');
    if (neg || n > (1ull << 31)) fail("a string of a malformed length");
    return size_t(n);
  }
};

struct Out {
  int fd;
  const char* peer;
  char* data = nullptr;
  size_t n = 0, cap = 0;
  Out(int f, const char* p) : fd(f), peer(p) {}
  void append(const char* s, size_t k) {
    if (n + k > cap) {
      cap = (n + k) * 2 + 64;
      data = (char*)realloc(data, cap);
      if (!data) fail("out of memory on the wire");
    }
    memcpy(data + n, s, k);
    n += k;
  }
  void push(char c) { append(&c, 1); }
  void reset() { n = 0; }
  void flush() {
    size_t off = 0;
    while (off < n) {
      ssize_t w = write(fd, data + off, n - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail(peer, " ended, writing to it: ", strerror(errno));
      off += size_t(w);
    }
    n = 0;
  }
  void integer(long long v) {
    char s[32];
    append(s, size_t(snprintf(s, sizeof s, "%lld ", v)));
  }
  void uinteger(unsigned long long v) {
    char s[32];
    append(s, size_t(snprintf(s, sizeof s, "%llu ", v)));
  }
  void text(const char* s, size_t k) {
    char h[32];
    append(h, size_t(snprintf(h, sizeof h, "%zu:", k)));
    append(s, k);
  }
};

// put and get for each type a declaration may use.
template <class I> typename std::enable_if<std::is_integral<I>::value && std::is_signed<I>::value>::type put(Out& o, I v) { o.integer(v); }
template <class I> typename std::enable_if<std::is_integral<I>::value && !std::is_signed<I>::value>::type put(Out& o, I v) { o.uinteger(v); }
template <class I> typename std::enable_if<std::is_integral<I>::value>::type get(In& in, I& v) {
  if (std::is_same<I, bool>::value) {
    int b = in.integer<int>();
    if (b != 0 && b != 1) fail("a bool that is neither 0 nor 1");
    v = I(b);
  } else {
    v = in.integer<I>();
  }
}
inline void put(Out& o, float v) { uint32_t b; memcpy(&b, &v, 4); o.uinteger(b); }
inline void get(In& in, float& v) { uint32_t b = in.integer<uint32_t>(); memcpy(&v, &b, 4); }
inline void put(Out& o, double v) { uint64_t b; memcpy(&b, &v, 8); o.uinteger(b); }
inline void get(In& in, double& v) { uint64_t b = in.integer<uint64_t>(); memcpy(&v, &b, 8); }
inline void put(Out& o, long double v) { put(o, double(v)); }
inline void get(In& in, long double& v) { double d; get(in, d); v = d; }
inline void put(Out& o, const char* s) { o.text(s, strlen(s)); }
#ifdef _GLIBCXX_STRING
inline void put(Out& o, const std::string& s) { o.text(s.data(), s.size()); }
inline void get(In& in, std::string& s) {
  size_t n = in.length();
  s.clear();
  for (size_t i = 0; i < n; i++) s += char(in.next());
}
#endif
#ifdef _STL_PAIR_H
template <class A, class B> void put(Out& o, const std::pair<A, B>& p);
template <class A, class B> void get(In& in, std::pair<A, B>& p);
#endif
#ifdef _GLIBCXX_VECTOR
template <class T> void put(Out& o, const std::vector<T>& v);
template <class T> void get(In& in, std::vector<T>& v);
#endif
#ifdef _GLIBCXX_LIST
template <class T> void put(Out& o, const std::list<T>& v);
template <class T> void get(In& in, std::list<T>& v);
#endif
#ifdef _GLIBCXX_SET
template <class T> void put(Out& o, const std::set<T>& v);
template <class T> void get(In& in, std::set<T>& v);
#endif
#ifdef _GLIBCXX_MAP
template <class K, class V> void put(Out& o, const std::map<K, V>& m);
template <class K, class V> void get(In& in, std::map<K, V>& m);
#endif
#ifdef CODERUN_WIRE_BOOST
void put(Out& o, const boost::any& a);
void get(In& in, boost::any& a);
#endif
#ifdef _STL_PAIR_H
template <class A, class B> void put(Out& o, const std::pair<A, B>& p) { put(o, p.first), put(o, p.second); }
template <class A, class B> void get(In& in, std::pair<A, B>& p) { get(in, p.first), get(in, p.second); }
#endif
#ifdef _GLIBCXX_VECTOR
template <class T> void put(Out& o, const std::vector<T>& v) {
  o.uinteger(v.size());
  for (const auto& x : v) put(o, T(x));
}
template <class T> void get(In& in, std::vector<T>& v) {
  size_t n = in.count();
  v.clear();
  for (size_t i = 0; i < n; i++) {
    T x{};
    get(in, x);
    v.push_back(x);
  }
}
#endif
#ifdef _GLIBCXX_LIST
template <class T> void put(Out& o, const std::list<T>& v) {
  o.uinteger(v.size());
  for (const auto& x : v) put(o, x);
}
template <class T> void get(In& in, std::list<T>& v) {
  size_t n = in.count();
  v.clear();
  for (size_t i = 0; i < n; i++) {
    T x{};
    get(in, x);
    v.push_back(x);
  }
}
#endif
#ifdef _GLIBCXX_SET
template <class T> void put(Out& o, const std::set<T>& v) {
  o.uinteger(v.size());
  for (const auto& x : v) put(o, x);
}
template <class T> void get(In& in, std::set<T>& v) {
  size_t n = in.count();
  v.clear();
  for (size_t i = 0; i < n; i++) {
    T x{};
    get(in, x);
    v.insert(x);
  }
}
#endif
#ifdef _GLIBCXX_MAP
template <class K, class V> void put(Out& o, const std::map<K, V>& m) {
  o.uinteger(m.size());
  for (const auto& kv : m) put(o, kv.first), put(o, kv.second);
}
template <class K, class V> void get(In& in, std::map<K, V>& m) {
  size_t n = in.count();
  m.clear();
  for (size_t i = 0; i < n; i++) {
    K k{};
    V v{};
    get(in, k), get(in, v);
    m[k] = v;
  }
}
#endif
#ifdef CODERUN_WIRE_BOOST
// A boost::any crosses with the type it holds, one of those HumanEval-X's
// tests give: nothing, int, long long, double, float, bool, char, string.
inline void put(Out& o, const boost::any& a) {
  const std::type_info& t = a.type();
  if (a.empty()) o.push('n');
  else if (t == typeid(int)) o.push('i'), put(o, boost::any_cast<int>(a));
  else if (t == typeid(long long)) o.push('l'), put(o, boost::any_cast<long long>(a));
  else if (t == typeid(double)) o.push('d'), put(o, boost::any_cast<double>(a));
  else if (t == typeid(float)) o.push('f'), put(o, boost::any_cast<float>(a));
  else if (t == typeid(bool)) o.push('b'), put(o, boost::any_cast<bool>(a));
  else if (t == typeid(char)) o.push('c'), put(o, boost::any_cast<char>(a));
#ifdef _GLIBCXX_STRING
  else if (t == typeid(std::string)) o.push('s'), put(o, boost::any_cast<std::string>(a));
#endif
  else fail("a boost::any holding a ", t.name(), ", which cannot cross between the processes");
}
inline void get(In& in, boost::any& a) {
  switch (in.next()) {
    case 'n': a = boost::any(); return;
    case 'i': { int v; get(in, v); a = v; return; }
    case 'l': { long long v; get(in, v); a = v; return; }
    case 'd': { double v; get(in, v); a = v; return; }
    case 'f': { float v; get(in, v); a = v; return; }
    case 'b': { bool v; get(in, v); a = v; return; }
    case 'c': { char v; get(in, v); a = v; return; }
#ifdef _GLIBCXX_STRING
    case 's': { std::string v; get(in, v); a = v; return; }
#endif
  }
  fail(in.peer, " sent a boost::any of an unknown tag");
}
#endif

// Wire is T's or U's end of the wire: descriptors 3 (in) and 4 (out);
// CODERUN_WIRE_PEER names the other end, for messages.
struct Wire {
  In in{3, CODERUN_WIRE_PEER};
  Out out{4, CODERUN_WIRE_PEER};
  Wire() { signal(SIGPIPE, SIG_IGN); }
};
inline Wire& wire() {
  static Wire* w = new Wire();
  return *w;
}

// T: result ends a call whose arguments the stub has put, and returns the
// answer, of the entry function's return type.
template <class R> R result() {
  Wire& l = wire();
  l.out.push('\n');
  l.out.flush();
  int kind = l.in.next();
  if (kind == 'E') {
    char what[512];
    size_t n = l.in.length(), k = 0;
    for (size_t i = 0; i < n; i++) {
      char c = char(l.in.next());
      if (k + 1 < sizeof what) what[k++] = c;
    }
    what[k] = 0;
    fail("the solution threw: ", what);
  }
  if (kind != 'R') fail(l.in.peer, " sent something else than an answer");
  R r{};
  get(l.in, r);
  l.in.expect('\n');
  return r;
}

// U: answer and failed write the answer to one call.
template <class R> void answer(const R& r) {
  Wire& l = wire();
  l.out.push('R');
  put(l.out, r);
  l.out.push('\n');
  l.out.flush();
}
inline void failed(const char* what) {
  Wire& l = wire();
  l.out.reset();
  l.out.push('E');
  put(l.out, what);
  l.out.push('\n');
  l.out.flush();
}

}  // namespace coderun_wire
