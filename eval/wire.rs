// coderun eval: the wire between a Rust item's tests (T) and its solution (U),
// two programs compiled apart and run as two processes (see the eval
// package's documentation, "Compiled languages"). It is each program's
// module coderun_wire. T calls the solution's functions through stubs that
// write their arguments on descriptor 4 and read the answer on descriptor 3
// (call); U's main reads each call on its descriptor 3, calls the solution
// and writes the answer on its descriptor 4 (Serve). Values are decoded by
// the static type the function's declaration gives them, and anything else
// than a well-formed value of that type ends T with a message (status 3),
// so that its tests fail; a panic of the solution's is a panic of the test
// that made the call, with the solution's message.
//
// Encoding: an integer is its decimal digits and a space; a float its bits
// as an unsigned integer; a bool 0 or 1, a char its code point, as integers;
// a string its length, ':' and its bytes (UTF-8); a sequence, set or map its
// length then its elements (a map's keys and values); an Option 'N', or 'S'
// and its value; a tuple its values; a dyn Any a string naming its type,
// then its value; an enum's value its variant's name, then its fields; a
// struct's named fields each their name then their value. A call is the
// function's number, its arguments and '\n'; an answer 'R', the value and
// '\n', or 'E', a string (what the solution panicked with) and '\n'.
//
// Borrowed types (&str, &Vec<T>, &dyn Any) are decoded as owned values
// leaked for the process's life, so that a decoded argument lives as long
// as any lifetime the declaration gives it.
#![allow(dead_code)]

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::fs::File;
use std::hash::Hash;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::io::FromRawFd;
use std::sync::Mutex;

/// fail ends the process with a message on its standard error (status 3),
/// past the test harness's capture of a test's output.
pub fn fail(msg: &str) -> ! {
    let _ = std::io::stderr().write_all(format!("\ncoderun eval: {}\n", msg).as_bytes());
    std::process::exit(3)
}

/// In reads values from the other program.
pub struct In {
    f: File,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    peer: &'static str,
}

impl In {
    fn fill(&mut self) -> bool {
        loop {
            match self.f.read(&mut self.buf) {
                Ok(n) => {
                    self.pos = 0;
                    self.len = n;
                    return n > 0;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => fail(&format!("reading from {}: {}", self.peer, e)),
            }
        }
    }
    /// more says whether another message comes (false at the end of input).
    pub fn more(&mut self) -> bool {
        self.pos < self.len || self.fill()
    }
    pub fn byte(&mut self) -> u8 {
        if self.pos == self.len && !self.fill() {
            fail(&format!("{} ended", self.peer))
        }
        self.pos += 1;
        self.buf[self.pos - 1]
    }
    /// bad ends the process: the other program sent something else than a
    /// well-formed value of the type expected.
    pub fn bad(&self, what: &str) -> ! {
        fail(&format!("{} sent something else than a well-formed value ({})", self.peer, what))
    }
    pub fn expect(&mut self, c: u8) {
        if self.byte() != c {
            self.bad("a stray byte")
        }
    }
    /// word reads bytes up to end (not included), at most 64.
    fn word(&mut self, end: u8) -> String {
        let mut w = String::new();
        loop {
            let c = self.byte();
            if c == end {
                return w;
            }
            if !(c.is_ascii_digit() || c == b'-') || w.len() > 64 {
                self.bad("a malformed number")
            }
            w.push(c as char);
        }
    }
    pub fn number<T: std::str::FromStr>(&mut self) -> T {
        let w = self.word(b' ');
        match w.parse() {
            Ok(v) => v,
            Err(_) => self.bad(&format!("{:?}, not an integer of its type's range", w)),
        }
    }
    pub fn count(&mut self) -> usize {
        let n: usize = self.number();
        if n > 1 << 31 {
            self.bad("a length too long for the wire")
        }
        n
    }
    /// name reads a string.
    pub fn name(&mut self) -> String {
        String::get(self)
    }
    /// field reads a field's name, which must be want.
    pub fn field(&mut self, want: &str) {
        let got = self.name();
        if got != want {
            self.bad(&format!("the field {:?} where {:?} was expected", got, want))
        }
    }
}

/// Out gathers a message for the other program, then sends it.
pub struct Out {
    f: File,
    buf: Vec<u8>,
    peer: &'static str,
}

impl Out {
    pub fn push(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
    pub fn number<T: std::fmt::Display>(&mut self, v: T) {
        self.push(format!("{} ", v).as_bytes());
    }
    pub fn name(&mut self, s: &str) {
        s.put(self);
    }
    fn flush(&mut self) {
        let r = self.f.write_all(&self.buf);
        self.buf.clear();
        if let Err(e) = r {
            fail(&format!("{} ended, writing to it: {}", self.peer, e))
        }
    }
}

/// A Wire is one program's two descriptors: 3, what the other sends, and
/// 4, what it sends the other (named peer in messages).
pub struct Wire {
    pub i: In,
    pub o: Out,
}

impl Wire {
    fn new(peer: &'static str) -> Wire {
        // SAFETY: descriptors 3 and 4 are the program's ends of the wire,
        // opened by the script that started it, and nothing else owns them.
        let (r, w) = unsafe { (File::from_raw_fd(3), File::from_raw_fd(4)) };
        Wire {
            i: In { f: r, buf: vec![0; 1 << 16], pos: 0, len: 0, peer },
            o: Out { f: w, buf: Vec::new(), peer },
        }
    }
}

/// Put writes a value; Get reads one of its type.
pub trait Put {
    fn put(&self, o: &mut Out);
}

pub trait Get: Sized {
    fn get(i: &mut In) -> Self;
}

macro_rules! integers {
    ($($t:ty),*) => {$(
        impl Put for $t {
            fn put(&self, o: &mut Out) { o.number(self) }
        }
        impl Get for $t {
            fn get(i: &mut In) -> Self { i.number() }
        }
    )*};
}
integers!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);

impl Put for f32 {
    fn put(&self, o: &mut Out) { o.number(self.to_bits()) }
}
impl Get for f32 {
    fn get(i: &mut In) -> Self { f32::from_bits(i.number()) }
}
impl Put for f64 {
    fn put(&self, o: &mut Out) { o.number(self.to_bits()) }
}
impl Get for f64 {
    fn get(i: &mut In) -> Self { f64::from_bits(i.number()) }
}
impl Put for bool {
    fn put(&self, o: &mut Out) { o.number(*self as u8) }
}
impl Get for bool {
    fn get(i: &mut In) -> Self {
        match i.number::<u8>() {
            0 => false,
            1 => true,
            _ => i.bad("a bool that is neither 0 nor 1"),
        }
    }
}
impl Put for char {
    fn put(&self, o: &mut Out) { o.number(*self as u32) }
}
impl Get for char {
    fn get(i: &mut In) -> Self {
        let n: u32 = i.number();
        char::from_u32(n).unwrap_or_else(|| i.bad("a char that is no Unicode scalar value"))
    }
}
impl Put for () {
    fn put(&self, _: &mut Out) {}
}
impl Get for () {
    fn get(_: &mut In) -> Self {}
}

impl Put for str {
    fn put(&self, o: &mut Out) {
        o.push(format!("{}:", self.len()).as_bytes());
        o.push(self.as_bytes());
    }
}
impl Put for String {
    fn put(&self, o: &mut Out) { self.as_str().put(o) }
}
impl Get for String {
    fn get(i: &mut In) -> Self {
        let n: usize = i.word(b':').parse().unwrap_or_else(|_| i.bad("a string of a malformed length"));
        if n > 1 << 31 {
            i.bad("a string too long for the wire")
        }
        let b: Vec<u8> = (0..n).map(|_| i.byte()).collect();
        String::from_utf8(b).unwrap_or_else(|_| i.bad("a string that is not UTF-8"))
    }
}
impl<'a> Get for &'a str {
    fn get(i: &mut In) -> Self { Box::leak(String::get(i).into_boxed_str()) }
}

impl<T: Put + ?Sized> Put for &T {
    fn put(&self, o: &mut Out) { (**self).put(o) }
}
impl<T: Put + ?Sized> Put for &mut T {
    fn put(&self, o: &mut Out) { (**self).put(o) }
}
impl<'a, T: Get + 'a> Get for &'a T {
    fn get(i: &mut In) -> Self { Box::leak(Box::new(T::get(i))) }
}
impl<T: Put + ?Sized> Put for Box<T> {
    fn put(&self, o: &mut Out) { (**self).put(o) }
}
impl<T: Get> Get for Box<T> {
    fn get(i: &mut In) -> Self { Box::new(T::get(i)) }
}

impl<T: Put> Put for [T] {
    fn put(&self, o: &mut Out) {
        o.number(self.len());
        for x in self {
            x.put(o)
        }
    }
}
impl<T: Put, const N: usize> Put for [T; N] {
    fn put(&self, o: &mut Out) { self[..].put(o) }
}
impl<T: Get, const N: usize> Get for [T; N] {
    fn get(i: &mut In) -> Self {
        let v: Vec<T> = Get::get(i);
        v.try_into().unwrap_or_else(|_| i.bad("an array of another length"))
    }
}
impl<'a, T: Get + 'a> Get for &'a [T] {
    fn get(i: &mut In) -> Self { Box::leak(Vec::<T>::get(i).into_boxed_slice()) }
}

macro_rules! sequences {
    ($($s:ident $(: $b:ident)*),*) => {$(
        impl<T: Put> Put for $s<T> {
            fn put(&self, o: &mut Out) {
                o.number(self.len());
                for x in self {
                    x.put(o)
                }
            }
        }
        impl<T: Get $(+ $b)*> Get for $s<T> {
            fn get(i: &mut In) -> Self {
                let n = i.count();
                let mut s = $s::new();
                for _ in 0..n {
                    s.extend(Some(T::get(i)));
                }
                if s.len() != n {
                    i.bad("a set with a repeated element")
                }
                s
            }
        }
    )*};
}
sequences!(Vec, VecDeque, HashSet: Eq: Hash, BTreeSet: Ord);

macro_rules! maps {
    ($($m:ident $(: $b:ident)*),*) => {$(
        impl<K: Put, V: Put> Put for $m<K, V> {
            fn put(&self, o: &mut Out) {
                o.number(self.len());
                for (k, v) in self {
                    k.put(o);
                    v.put(o);
                }
            }
        }
        impl<K: Get $(+ $b)*, V: Get> Get for $m<K, V> {
            fn get(i: &mut In) -> Self {
                let n = i.count();
                let mut m = $m::new();
                for _ in 0..n {
                    let k = K::get(i);
                    if m.insert(k, V::get(i)).is_some() {
                        i.bad("a map with a repeated key")
                    }
                }
                m
            }
        }
    )*};
}
maps!(HashMap: Eq: Hash, BTreeMap: Ord);

impl<T: Put> Put for Option<T> {
    fn put(&self, o: &mut Out) {
        match self {
            None => o.push(b"N"),
            Some(v) => {
                o.push(b"S");
                v.put(o)
            }
        }
    }
}
impl<T: Get> Get for Option<T> {
    fn get(i: &mut In) -> Self {
        match i.byte() {
            b'N' => None,
            b'S' => Some(T::get(i)),
            _ => i.bad("an Option of an unknown tag"),
        }
    }
}

macro_rules! tuples {
    ($(($($t:ident $n:tt),+)),*) => {$(
        impl<$($t: Put),+> Put for ($($t,)+) {
            fn put(&self, o: &mut Out) { $(self.$n.put(o);)+ }
        }
        impl<$($t: Get),+> Get for ($($t,)+) {
            fn get(i: &mut In) -> Self { ($($t::get(i),)+) }
        }
    )*};
}
tuples!((A 0), (A 0, B 1), (A 0, B 1, C 2), (A 0, B 1, C 2, D 3), (A 0, B 1, C 2, D 3, E 4), (A 0, B 1, C 2, D 3, E 4, F 5));

// A dyn Any crosses with the type it holds, one of these (those
// HumanEval-X's tests give and a few more), named as stringify! spells it.
macro_rules! anys {
    ($($t:ty),*) => {
        impl Put for dyn Any {
            fn put(&self, o: &mut Out) {
                $(if let Some(v) = self.downcast_ref::<$t>() {
                    o.name(stringify!($t));
                    return v.put(o);
                })*
                fail("a dyn Any holding a value of a type that cannot cross between the processes")
            }
        }
        impl Get for Box<dyn Any> {
            fn get(i: &mut In) -> Self {
                let t = i.name();
                $(if t == stringify!($t) {
                    return Box::new(<$t>::get(i));
                })*
                i.bad(&format!("a dyn Any of the type {:?}, which cannot cross", t))
            }
        }
    };
}
anys!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64, bool, char, (), String, &'static str,
      Vec<Box<dyn Any>>, Vec<i32>, Vec<i64>, Vec<f32>, Vec<f64>, Vec<String>, Vec<&'static str>, Option<i32>);

impl<'a> Get for &'a dyn Any {
    fn get(i: &mut In) -> Self { Box::leak(<Box<dyn Any>>::get(i)) }
}

static TESTS: Mutex<Option<Wire>> = Mutex::new(None);

/// T: call calls the solution's function number f (name, for messages)
/// with args and returns its answer, of the function's declared type; a
/// panic of the solution's is the caller's, with its message. One call
/// crosses at a time (the tests may run in several threads).
pub fn call<R: Get>(f: usize, name: &str, args: &[&dyn Put]) -> R {
    let mut g = TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let w = g.get_or_insert_with(|| Wire::new("the solution's process"));
    w.o.number(f);
    for a in args {
        a.put(&mut w.o);
    }
    w.o.push(b"\n");
    w.o.flush();
    match w.i.byte() {
        b'R' => {
            let r = R::get(&mut w.i);
            w.i.expect(b'\n');
            r
        }
        b'E' => {
            let m = String::get(&mut w.i);
            w.i.expect(b'\n');
            drop(g);
            // On standard error too: the test harness shows a failed
            // test's panic on its standard output.
            let m = format!("the solution panicked in {}: {}", name, m);
            let _ = std::io::stderr().write_all(format!("\ncoderun eval: {}\n", m).as_bytes());
            panic!("{}", m)
        }
        _ => w.i.bad(&format!("no answer to a call of {}", name)),
    }
}

static PANICKED_AT: Mutex<String> = Mutex::new(String::new());

/// U: Serve reads the tests' calls and writes the answers.
pub struct Serve {
    w: Wire,
}

impl Serve {
    pub fn new() -> Serve {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |p| {
            if let Some(l) = p.location() {
                *PANICKED_AT.lock().unwrap_or_else(|e| e.into_inner()) = format!(" (at {}:{})", l.file(), l.line());
            }
            prev(p)
        }));
        Serve { w: Wire::new("the tests' process") }
    }
    /// next is the number of the function the next call calls, or None at
    /// the end of the calls.
    pub fn next(&mut self) -> Option<usize> {
        if !self.w.i.more() {
            return None;
        }
        Some(self.w.i.number())
    }
    pub fn arg<T: Get>(&mut self) -> T {
        T::get(&mut self.w.i)
    }
    pub fn answer<R: Put, F: FnOnce() -> R>(&mut self, f: F) {
        self.w.i.expect(b'\n');
        PANICKED_AT.lock().unwrap_or_else(|e| e.into_inner()).clear();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            Ok(r) => {
                self.w.o.push(b"R");
                r.put(&mut self.w.o);
            }
            Err(p) => {
                let m = match (p.downcast_ref::<&str>(), p.downcast_ref::<String>()) {
                    (Some(s), _) => s.to_string(),
                    (_, Some(s)) => s.clone(),
                    _ => "a value that is no string".to_string(),
                };
                let at = PANICKED_AT.lock().unwrap_or_else(|e| e.into_inner()).clone();
                self.w.o.push(b"E");
                (m + &at).put(&mut self.w.o);
            }
        }
        self.w.o.push(b"\n");
        self.w.o.flush();
    }
}
