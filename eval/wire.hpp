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
// It is placed after the prompt's includes, and has the overloads of the
// containers they included only (a declaration uses no other), so that
// the two programs compile hardly slower than the prompt alone.
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <unistd.h>
#ifndef CODERUN_WIRE_PEER
#define CODERUN_WIRE_PEER "the solution's process"
#endif
#ifdef CODERUN_WIRE_BOOST
#include <boost/any.hpp>
#endif

namespace coderun_wire {

[[noreturn]] inline void fail(const std::string& why) {
  std::string m = "\ncoderun eval: " + why + "\n";
  ssize_t n = write(2, m.data(), m.size());
  (void)n;
  _exit(3);
}

struct In {
  int fd;
  std::string peer;
  char buf[1 << 16];
  size_t pos = 0, len = 0;
  In(int f, std::string p) : fd(f), peer(p) {}
  // more says whether another message comes (false at the end of input).
  bool more() {
    if (pos < len) return true;
    ssize_t n;
    do n = read(fd, buf, sizeof buf); while (n < 0 && errno == EINTR);
    if (n < 0) fail("reading from " + peer + ": " + strerror(errno));
    pos = 0, len = size_t(n);
    return n > 0;
  }
  int next() {
    if (pos == len) {
      ssize_t n;
      do n = read(fd, buf, sizeof buf); while (n < 0 && errno == EINTR);
      if (n == 0) fail(peer + " ended");
      if (n < 0) fail("reading from " + peer + ": " + strerror(errno));
      pos = 0, len = size_t(n);
    }
    return (unsigned char)buf[pos++];
  }
  void expect(char c) {
    int got = next();
    if (got != c) fail(std::string("the solution's process sent something else than an answer (byte ") + std::to_string(got) + ", wanted '" + (c == '\n' ? std::string("\\n") : std::string(1, c)) + "')");
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
    if (n == 0 || c != end) fail("the solution's process sent something else than a well-formed value (a malformed integer)");
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
    if (n > (1ull << 31)) fail("a sequence too long for the wire");
    return size_t(n);
  }
};

struct Out {
  int fd;
  std::string peer;
  std::string buf;
  Out(int f, std::string p) : fd(f), peer(p) {}
  void flush() {
    size_t off = 0;
    while (off < buf.size()) {
      ssize_t n = write(fd, buf.data() + off, buf.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail(peer + " ended (writing to it: " + strerror(errno) + ")");
      off += size_t(n);
    }
    buf.clear();
  }
  void integer(long long v) { buf += std::to_string(v), buf += ' '; }
  void uinteger(unsigned long long v) { buf += std::to_string(v), buf += ' '; }
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
inline void put(Out& o, float v) { uint32_t b; std::memcpy(&b, &v, 4); o.uinteger(b); }
inline void get(In& in, float& v) { uint32_t b = in.integer<uint32_t>(); std::memcpy(&v, &b, 4); }
inline void put(Out& o, double v) { uint64_t b; std::memcpy(&b, &v, 8); o.uinteger(b); }
inline void get(In& in, double& v) { uint64_t b = in.integer<uint64_t>(); std::memcpy(&v, &b, 8); }
inline void put(Out& o, long double v) { put(o, double(v)); }
inline void get(In& in, long double& v) { double d; get(in, d); v = d; }
inline void put(Out& o, const std::string& s) { o.buf += std::to_string(s.size()), o.buf += ':', o.buf += s; }
inline void get(In& in, std::string& s) {
  bool neg;
  unsigned long long n;
  in.digits(neg, n, ':');
  if (neg || n > (1ull << 31)) fail("a string of a malformed length");
  s.clear();
  for (unsigned long long i = 0; i < n; i++) s += char(in.next());
}
inline void put(Out& o, const char* s) { put(o, std::string(s)); }
template <class A, class B> void put(Out& o, const std::pair<A, B>& p);
template <class A, class B> void get(In& in, std::pair<A, B>& p);
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
template <class A, class B> void put(Out& o, const std::pair<A, B>& p) { put(o, p.first), put(o, p.second); }
template <class A, class B> void get(In& in, std::pair<A, B>& p) { get(in, p.first), get(in, p.second); }
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
  if (a.empty()) o.buf += 'n';
  else if (t == typeid(int)) o.buf += 'i', put(o, boost::any_cast<int>(a));
  else if (t == typeid(long long)) o.buf += 'l', put(o, boost::any_cast<long long>(a));
  else if (t == typeid(double)) o.buf += 'd', put(o, boost::any_cast<double>(a));
  else if (t == typeid(float)) o.buf += 'f', put(o, boost::any_cast<float>(a));
  else if (t == typeid(bool)) o.buf += 'b', put(o, boost::any_cast<bool>(a));
  else if (t == typeid(char)) o.buf += 'c', put(o, boost::any_cast<char>(a));
  else if (t == typeid(std::string)) o.buf += 's', put(o, boost::any_cast<std::string>(a));
  else fail(std::string("a boost::any holding a ") + t.name() + ", which cannot cross between the processes");
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
    case 's': { std::string v; get(in, v); a = v; return; }
  }
  fail("the solution's process sent a boost::any of an unknown tag");
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

// T: call ends a call whose arguments the stub has put, and returns the
// answer, of the entry function's return type.
template <class R> R result() {
  Wire& l = wire();
  l.out.buf += '\n';
  l.out.flush();
  int kind = l.in.next();
  if (kind == 'E') {
    std::string what;
    get(l.in, what);
    fail("the solution threw: " + what);
  }
  if (kind != 'R') fail("the solution's process sent something else than an answer (byte " + std::to_string(kind) + ")");
  R r{};
  get(l.in, r);
  l.in.expect('\n');
  return r;
}

}  // namespace coderun_wire
