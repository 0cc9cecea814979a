//! Shared helpers for the integration tests: the binary's path, a small `.npy` writer (any
//! version, byte order, storage order, or a raw header for malformed files), a strict reader for
//! the tool's output, run helpers with a time limit, and report accessors.

pub mod containers;
mod fixtures;
pub use fixtures::*;

use serde_json::Value;
use std::collections::BTreeSet;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The tensorop binary cargo built for these tests, or the one named by `TENSOROP_TEST_BIN`
/// (to run the suite against another build, e.g. `target/release/tensorop`).
pub fn bin() -> PathBuf {
    match std::env::var_os("TENSOROP_TEST_BIN") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_tensorop")),
    }
}

/// Makes the file at `path` look unwritten for over a minute, past the age at which an unlocked
/// temporary file counts as a killed run's leftover (`docs/reliability.md`).
pub fn age_past_leftover_limit(path: &Path) {
    let f = fs::OpenOptions::new().write(true).open(path).expect("open the file to age");
    f.set_modified(std::time::SystemTime::now() - Duration::from_secs(120)).expect("age the file");
}

/// The crate root (where `testdata/` and `tests/` live).
pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// How long one run of the binary may take before the test fails.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------------------------
// Elements
// ---------------------------------------------------------------------------------------------

/// A float16 value held as its bit pattern (the tests spell float16 values as hex bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct H(pub u16);

impl H {
    pub fn is_nan(self) -> bool {
        (self.0 & 0x7c00) == 0x7c00 && (self.0 & 0x03ff) != 0
    }
}

/// A Rust type that stands for one `.npy` element type.
pub trait Elem: Copy + std::fmt::Debug + 'static {
    /// NumPy kind character: `f`, `i` or `u`.
    const KIND: char;
    /// Bytes per element.
    const SIZE: usize;
    /// NumPy's dtype name (`float32`).
    const NAME: &'static str;
    fn to_le(self) -> Vec<u8>;
    fn from_le(b: &[u8]) -> Self;
    /// The bit pattern, zero-extended.
    fn bits(self) -> u64;
    fn nan(self) -> bool;

    fn to_be(self) -> Vec<u8> {
        let mut v = self.to_le();
        v.reverse();
        v
    }
    /// The `.npy` descr with the given byte-order character (`|` forced for one-byte types).
    fn descr(order: char) -> String {
        let order = if Self::SIZE == 1 { '|' } else { order };
        format!("{order}{}{}", Self::KIND, Self::SIZE)
    }
}

macro_rules! int_elem {
    ($($t:ty, $u:ty, $k:expr, $name:expr);* $(;)?) => {$(
        impl Elem for $t {
            const KIND: char = $k;
            const SIZE: usize = std::mem::size_of::<$t>();
            const NAME: &'static str = $name;
            fn to_le(self) -> Vec<u8> { self.to_le_bytes().to_vec() }
            fn from_le(b: &[u8]) -> Self { <$t>::from_le_bytes(b.try_into().unwrap()) }
            fn bits(self) -> u64 { (self as $u) as u64 }
            fn nan(self) -> bool { false }
        }
    )*};
}
int_elem!(
    i8, u8, 'i', "int8";
    i16, u16, 'i', "int16";
    i32, u32, 'i', "int32";
    i64, u64, 'i', "int64";
    u8, u8, 'u', "uint8";
    u16, u16, 'u', "uint16";
    u32, u32, 'u', "uint32";
    u64, u64, 'u', "uint64";
);

impl Elem for f32 {
    const KIND: char = 'f';
    const SIZE: usize = 4;
    const NAME: &'static str = "float32";
    fn to_le(self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
    fn from_le(b: &[u8]) -> Self {
        f32::from_le_bytes(b.try_into().unwrap())
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
}

impl Elem for f64 {
    const KIND: char = 'f';
    const SIZE: usize = 8;
    const NAME: &'static str = "float64";
    fn to_le(self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
    fn from_le(b: &[u8]) -> Self {
        f64::from_le_bytes(b.try_into().unwrap())
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
}

impl Elem for H {
    const KIND: char = 'f';
    const SIZE: usize = 2;
    const NAME: &'static str = "float16";
    fn to_le(self) -> Vec<u8> {
        self.0.to_le_bytes().to_vec()
    }
    fn from_le(b: &[u8]) -> Self {
        H(u16::from_le_bytes(b.try_into().unwrap()))
    }
    fn bits(self) -> u64 {
        self.0 as u64
    }
    fn nan(self) -> bool {
        self.is_nan()
    }
}

/// Asserts two element slices are equal bit for bit, except that NaNs only need to be NaN at the
/// same positions (the contract lets NaN payloads differ).
pub fn assert_same_bits<T: Elem>(got: &[T], expected: &[T]) {
    assert_eq!(got.len(), expected.len(), "element count differs");
    let mut bad = Vec::new();
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        let ok = if e.nan() || g.nan() { e.nan() && g.nan() } else { g.bits() == e.bits() };
        if !ok {
            bad.push(i);
        }
    }
    if let Some(&i) = bad.first() {
        panic!(
            "{} of {} elements differ; first at flat index {i}: got {:?} (bits {:#x}), expected {:?} (bits {:#x})",
            bad.len(),
            got.len(),
            got[i],
            got[i].bits(),
            expected[i],
            expected[i].bits()
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Writing .npy files
// ---------------------------------------------------------------------------------------------

/// Byte order written into a test input's descr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// `<`
    Little,
    /// `>`
    Big,
    /// `=` (native; the data is written in the machine's order)
    Native,
}

/// How a test input is stored.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub order: Order,
    pub fortran: bool,
    pub version: (u8, u8),
}

impl Default for Layout {
    fn default() -> Self {
        Layout { order: Order::Little, fortran: false, version: (1, 0) }
    }
}

impl Layout {
    pub fn big() -> Self {
        Layout { order: Order::Big, ..Layout::default() }
    }
    pub fn fortran() -> Self {
        Layout { fortran: true, ..Layout::default() }
    }
    pub fn version(major: u8) -> Self {
        Layout { version: (major, 0), ..Layout::default() }
    }
}

/// Python's repr of a shape tuple: `()`, `(3,)`, `(2, 3)`.
pub fn py_shape(shape: &[usize]) -> String {
    match shape.len() {
        0 => "()".to_string(),
        1 => format!("({},)", shape[0]),
        _ => format!("({})", shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// A header dict as NumPy writes it; `shape` is given as Python source so malformed shapes can be
/// written too.
pub fn header_dict(descr: &str, fortran: bool, shape: &str) -> String {
    let f = if fortran { "True" } else { "False" };
    format!("{{'descr': '{descr}', 'fortran_order': {f}, 'shape': {shape}, }}")
}

/// A complete `.npy` file from a raw header string (padded with spaces and a newline so the data
/// starts on a 64-byte boundary, as NumPy does) and raw data bytes. Versions 1.x use a 2-byte
/// header length, every other version a 4-byte one.
pub fn npy_raw(version: (u8, u8), header: &str, data: &[u8]) -> Vec<u8> {
    let len_bytes = if version.0 == 1 { 2 } else { 4 };
    let prefix = 6 + 2 + len_bytes;
    let mut h = header.to_string();
    let unpadded = prefix + h.len() + 1;
    let padded = unpadded.div_ceil(64) * 64;
    h.push_str(&" ".repeat(padded - unpadded));
    h.push('\n');
    let mut out = b"\x93NUMPY".to_vec();
    out.push(version.0);
    out.push(version.1);
    if len_bytes == 2 {
        out.extend_from_slice(&u16::try_from(h.len()).unwrap().to_le_bytes());
    } else {
        out.extend_from_slice(&u32::try_from(h.len()).unwrap().to_le_bytes());
    }
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(data);
    out
}

/// The element order of a Fortran-stored array, given its values in logical (C) order.
pub fn c_to_fortran<T: Copy>(shape: &[usize], values: &[T]) -> Vec<T> {
    let n: usize = shape.iter().product();
    assert_eq!(n, values.len(), "shape and value count disagree");
    let rank = shape.len();
    // C strides of the logical array.
    let mut cstride = vec![1usize; rank];
    for d in (0..rank.saturating_sub(1)).rev() {
        cstride[d] = cstride[d + 1] * shape[d + 1];
    }
    let mut idx = vec![0usize; rank];
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let flat: usize = idx.iter().zip(&cstride).map(|(i, s)| i * s).sum();
        out.push(values[flat]);
        // First index varies fastest in Fortran order.
        for d in 0..rank {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// A `.npy` file holding `values` (logical C order) with the given layout.
pub fn npy_with<T: Elem>(shape: &[usize], values: &[T], layout: Layout) -> Vec<u8> {
    let n: usize = shape.iter().product();
    assert_eq!(n, values.len(), "shape {shape:?} needs {n} values");
    let stored = if layout.fortran { c_to_fortran(shape, values) } else { values.to_vec() };
    let (order_char, big) = match layout.order {
        Order::Little => ('<', false),
        Order::Big => ('>', true),
        Order::Native => ('=', cfg!(target_endian = "big")),
    };
    let mut data = Vec::with_capacity(n * T::SIZE);
    for v in stored {
        data.extend(if big { v.to_be() } else { v.to_le() });
    }
    let header = header_dict(&T::descr(order_char), layout.fortran, &py_shape(shape));
    npy_raw(layout.version, &header, &data)
}

/// A plain little-endian, C-order, version 1.0 `.npy` file.
pub fn npy<T: Elem>(shape: &[usize], values: &[T]) -> Vec<u8> {
    npy_with(shape, values, Layout::default())
}

// ---------------------------------------------------------------------------------------------
// Reading .npy files (strictly, as the contract says the tool writes them)
// ---------------------------------------------------------------------------------------------

/// A parsed `.npy` file.
#[derive(Debug, Clone)]
pub struct Npy {
    pub version: (u8, u8),
    pub header: String,
    pub descr: String,
    pub fortran: bool,
    pub shape: Vec<usize>,
    pub data: Vec<u8>,
}

fn dict_value<'a>(header: &'a str, key: &str) -> &'a str {
    let k = format!("'{key}':");
    let at = header.find(&k).unwrap_or_else(|| panic!("header lacks {key}: {header}"));
    header[at + k.len()..].trim_start()
}

/// Parses a `.npy` file's bytes; panics (with the reason) on anything malformed, including bytes
/// after the data.
pub fn parse_npy(bytes: &[u8]) -> Npy {
    assert!(bytes.len() >= 10, "file too short for a .npy ({} bytes)", bytes.len());
    assert_eq!(&bytes[..6], b"\x93NUMPY", "bad magic");
    let version = (bytes[6], bytes[7]);
    let (hlen, start) = match version.0 {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => (u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize, 12),
        v => panic!("unknown .npy major version {v}"),
    };
    let header = std::str::from_utf8(&bytes[start..start + hlen]).expect("header is not text").to_string();
    assert!(header.ends_with('\n'), "header does not end in a newline");
    let d = dict_value(&header, "descr");
    assert!(d.starts_with('\''), "descr is not a string: {header}");
    let descr = d[1..d[1..].find('\'').unwrap() + 1].to_string();
    let f = dict_value(&header, "fortran_order");
    let fortran = if f.starts_with("True") {
        true
    } else if f.starts_with("False") {
        false
    } else {
        panic!("bad fortran_order: {header}")
    };
    let s = dict_value(&header, "shape");
    assert!(s.starts_with('('), "shape is not a tuple: {header}");
    let inner = &s[1..s.find(')').expect("unclosed shape")];
    let shape: Vec<usize> = inner
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| t.parse().expect("shape entry is not an integer"))
        .collect();
    Npy { version, header, descr, fortran, shape, data: bytes[start + hlen..].to_vec() }
}

impl Npy {
    /// Checks this is the tool's output format — version 1.0, little-endian (or `|` for one-byte
    /// types), C order, exactly the data the shape needs — with the given element type and shape,
    /// and returns the elements.
    pub fn output_values<T: Elem>(&self, shape: &[usize]) -> Vec<T> {
        assert_eq!(self.version, (1, 0), "output .npy version should be 1.0");
        assert!(!self.fortran, "output should be C order");
        let order = self.descr.chars().next().unwrap();
        if T::SIZE == 1 {
            assert!(order == '|' || order == '<', "descr {} for a one-byte type", self.descr);
        } else {
            assert_eq!(order, '<', "output should be little-endian, got {}", self.descr);
        }
        assert_eq!(&self.descr[1..], &T::descr('<')[1..], "output dtype should be {}", T::NAME);
        assert_eq!(self.shape, shape, "output shape");
        let n: usize = shape.iter().product();
        assert_eq!(self.data.len(), n * T::SIZE, "output data length (no more, no less than the shape needs)");
        self.data.chunks_exact(T::SIZE).map(T::from_le).collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Expected values
// ---------------------------------------------------------------------------------------------

/// NumPy broadcast of two shapes, or None when incompatible.
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let r = a.len().max(b.len());
    let mut out = vec![0; r];
    for i in 0..r {
        let da = if i < r - a.len() { 1 } else { a[i - (r - a.len())] };
        let db = if i < r - b.len() { 1 } else { b[i - (r - b.len())] };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return None;
        };
    }
    Some(out)
}

/// Applies `f` element-wise with NumPy broadcasting; returns the output shape and values.
pub fn broadcast_map<T: Copy, R>(
    sa: &[usize],
    a: &[T],
    sb: &[usize],
    b: &[T],
    f: impl Fn(T, T) -> R,
) -> (Vec<usize>, Vec<R>) {
    let out = broadcast_shape(sa, sb).expect("shapes broadcast");
    let r = out.len();
    let strides = |s: &[usize]| -> Vec<usize> {
        let pad = r - s.len();
        let mut st = vec![0usize; r];
        let mut acc = 1;
        for i in (0..s.len()).rev() {
            st[pad + i] = if s[i] == 1 { 0 } else { acc };
            acc *= s[i];
        }
        st
    };
    let (ta, tb) = (strides(sa), strides(sb));
    let n: usize = out.iter().product();
    let mut idx = vec![0usize; r];
    let mut vals = Vec::with_capacity(n);
    for _ in 0..n {
        let ia: usize = idx.iter().zip(&ta).map(|(i, s)| i * s).sum();
        let ib: usize = idx.iter().zip(&tb).map(|(i, s)| i * s).sum();
        vals.push(f(a[ia], b[ib]));
        for d in (0..r).rev() {
            idx[d] += 1;
            if idx[d] < out[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    (out, vals)
}

// ---------------------------------------------------------------------------------------------
// Running the binary
// ---------------------------------------------------------------------------------------------

/// What a run of the binary produced.
#[derive(Debug)]
pub struct Out {
    /// Exit code; None when killed by a signal.
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub args: Vec<String>,
}

impl Out {
    /// Panics with the command line and stderr unless the exit code is `code`.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "`tensorop {}` exited {:?}, expected {code}\n--- stderr ---\n{}",
            self.args.join(" "),
            self.code,
            self.stderr
        );
        self
    }

    /// Success: exit 0.
    pub fn ok(&self) -> &Self {
        self.expect_code(0)
    }

    /// The stderr has something to say (every failure must explain itself).
    pub fn expect_message(&self) -> &Self {
        assert!(
            !self.stderr.trim().is_empty(),
            "`tensorop {}` failed without a message on stderr",
            self.args.join(" ")
        );
        self
    }

    /// stderr mentions `needle` (case-insensitive).
    pub fn stderr_mentions(&self, needle: &str) -> &Self {
        assert!(
            self.stderr.to_lowercase().contains(&needle.to_lowercase()),
            "stderr of `tensorop {}` should mention {needle:?}; it was:\n{}",
            self.args.join(" "),
            self.stderr
        );
        self
    }

    pub fn stdout_str(&self) -> String {
        String::from_utf8(self.stdout.clone()).expect("stdout is UTF-8")
    }

    pub fn stdout_json(&self) -> Value {
        serde_json::from_slice(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout of `tensorop {}` is not JSON ({e}):\n{}",
                self.args.join(" "),
                String::from_utf8_lossy(&self.stdout)
            )
        })
    }
}

/// Where a run's standard input comes from.
pub enum Input<'a> {
    /// `/dev/null`
    Null,
    /// A pipe fed with these bytes.
    Pipe(&'a [u8]),
    /// A redirected file.
    File(&'a Path),
}

fn drain<R: Read + Send + 'static>(r: Option<R>) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut r) = r {
            let _ = r.read_to_end(&mut buf);
        }
        buf
    })
}

/// Waits for `child` at most `RUN_TIMEOUT`; kills it and panics after that.
pub fn wait_limited(child: &mut Child, what: &str) -> Option<i32> {
    let deadline = Instant::now() + RUN_TIMEOUT;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`{what}` did not finish within {RUN_TIMEOUT:?}");
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Runs the binary in `dir` with `args`, the given stdin, stdout and stderr captured.
pub fn run_in(dir: &Path, args: &[&str], input: Input) -> Out {
    run_in_env(dir, args, input, &[])
}

/// Windows's `STATUS_DLL_INIT_FAILED`: under Wine on a loaded machine a process can fail to
/// start with it, before any of tensorop's code runs.
const DLL_INIT_FAILED: i32 = 0xC000_0142_u32 as i32;

/// Windows's `ERROR_INTERNAL_ERROR` (1359): under Wine on a loaded machine `CreateProcess` itself
/// can fail with it; nothing was started.
const SPAWN_INTERNAL_ERROR: i32 = 1359;

/// Starts `cmd`. On Windows a start that failed inside the system ([`SPAWN_INTERNAL_ERROR`],
/// nothing started) is tried again, twice at most, after a pause; any other error panics,
/// naming `what`.
pub fn spawn(cmd: &mut Command, what: &str) -> Child {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Ok(child) => return child,
            Err(e) if cfg!(windows) && e.raw_os_error() == Some(SPAWN_INTERNAL_ERROR) && tries < 2 => {
                tries += 1;
                thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("start {what}: {e}"),
        }
    }
}

/// `cmd`'s exit code, standard output and standard error, like [`Command::output`], with the
/// Windows start failures [`spawn`] and [`run_in_env`] retry retried here too; panics if `cmd`
/// cannot be started or runs longer than `RUN_TIMEOUT`.
pub fn output(cmd: &mut Command, what: &str) -> (Option<i32>, Vec<u8>, Vec<u8>) {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut tries = 0;
    loop {
        let mut child = spawn(cmd, what);
        let out = drain(child.stdout.take());
        let err = drain(child.stderr.take());
        let code = wait_limited(&mut child, what);
        let (out, err) = (out.join().unwrap(), err.join().unwrap());
        if cfg!(windows) && code == Some(DLL_INIT_FAILED) && tries < 2 {
            tries += 1;
            continue;
        }
        return (code, out, err);
    }
}

/// [`run_in`] with extra environment variables. On Windows a run that failed to start
/// ([`DLL_INIT_FAILED`], nothing done) is started again, twice at most.
pub fn run_in_env(dir: &Path, args: &[&str], input: Input, env: &[(&str, &str)]) -> Out {
    let mut out = run_once(dir, args, &input, env);
    for _ in 0..2 {
        if !(cfg!(windows) && out.code == Some(DLL_INIT_FAILED)) {
            break;
        }
        out = run_once(dir, args, &input, env);
    }
    out
}

fn run_once(dir: &Path, args: &[&str], input: &Input, env: &[(&str, &str)]) -> Out {
    let mut cmd = Command::new(bin());
    cmd.args(args).current_dir(dir).env_remove("RUST_BACKTRACE").stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.envs(env.iter().copied());
    let mut feed = None;
    match input {
        Input::Null => {
            cmd.stdin(Stdio::null());
        }
        Input::Pipe(bytes) => {
            cmd.stdin(Stdio::piped());
            feed = Some(bytes.to_vec());
        }
        Input::File(p) => {
            cmd.stdin(Stdio::from(fs::File::open(p).expect("open stdin file")));
        }
    }
    let what = format!("tensorop {}", args.join(" "));
    let mut child = spawn(&mut cmd, &what);
    let writer = feed.map(|bytes| {
        let mut stdin = child.stdin.take().expect("stdin pipe");
        thread::spawn(move || {
            // The tool may stop reading early (e.g. on a bad header); that is not our failure.
            let _ = stdin.write_all(&bytes);
        })
    });
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let code = wait_limited(&mut child, &what);
    if let Some(w) = writer {
        let _ = w.join();
    }
    Out {
        code,
        stdout: out.join().unwrap(),
        stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
        args: args.iter().map(|s| s.to_string()).collect(),
    }
}

/// Prints why `test` skips and returns false, or panics when the environment variable `var` is
/// `1` (as CI sets it), which forbids skipping for want of `why`'s prerequisite.
pub fn skip(test: &str, var: &str, why: &str) -> bool {
    if std::env::var(var).as_deref() == Ok("1") {
        panic!("{test}: {why}, and {var}=1 forbids skipping");
    }
    eprintln!("skipping {test}: {why}; set {var}=1 to make this a failure");
    false
}

/// Ok(()) when python3 can import every one of the packages `modules`; otherwise the reason,
/// naming the first package it cannot import.
pub fn python_modules_available(modules: &[&str]) -> Result<(), String> {
    for module in modules {
        match Command::new("python3").args(["-c", &format!("import {module}")]).output() {
            Err(e) => return Err(format!("python3 could not be run: {e}")),
            Ok(o) if !o.status.success() => {
                let why = String::from_utf8_lossy(&o.stderr);
                let last = why.trim().lines().last().unwrap_or("").to_string();
                return Err(format!("python3 cannot import the {module} package: {last}"));
            }
            Ok(_) => {}
        }
    }
    Ok(())
}

/// Whether a wgpu adapter is present (`tensorop devices` lists one besides any DirectML
/// adapter); a missing one skips `test`, or fails it when TENSOROP_REQUIRE_GPU=1.
pub fn gpu_available(test: &str) -> bool {
    let out = Dir::new().run(&["devices", "--json"]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    // An adapter entry, not the entry that says why there is none (`{"api": "wgpu", "error"}`).
    let wgpu = list.as_array().is_some_and(|l| l.iter().any(|d| d["api"] != "DirectML" && d.get("error").is_none()));
    wgpu || skip(test, "TENSOROP_REQUIRE_GPU", &format!("no GPU adapter ({})", out.stderr.trim()))
}

/// Whether the process `pid` holds an output file open in `dir`: an unnamed one (its `/proc`
/// link reads `DIR/#INODE (deleted)`) or a named temporary file (`.NAME.XXXXXX.tensorop-tmp`).
#[cfg(unix)]
pub fn writing_output_in(pid: u32, dir: &Path) -> bool {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
    fds.filter_map(|e| fs::read_link(e.ok()?.path()).ok()).any(|to| {
        let name = to.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        to.parent() == Some(&dir) && (name.ends_with(".tensorop-tmp") || name.ends_with(" (deleted)"))
    })
}

/// A temporary working directory for one test.
pub struct Dir {
    pub tmp: tempfile::TempDir,
}

impl Dir {
    pub fn new() -> Self {
        Dir { tmp: tempfile::Builder::new().prefix("tensorop-test-").tempdir().expect("tempdir") }
    }

    pub fn root(&self) -> &Path {
        self.tmp.path()
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// Writes `bytes` to `name` and returns the name (handy inline in argument lists).
    pub fn write<'a>(&self, name: &'a str, bytes: &[u8]) -> &'a str {
        fs::write(self.path(name), bytes).expect("write test file");
        name
    }

    pub fn read(&self, name: &str) -> Vec<u8> {
        fs::read(self.path(name)).unwrap_or_else(|e| panic!("read {name}: {e}"))
    }

    pub fn exists(&self, name: &str) -> bool {
        self.path(name).exists()
    }

    /// The names in the directory (to spot stray temporary files).
    pub fn listing(&self) -> BTreeSet<String> {
        fs::read_dir(self.root())
            .expect("read_dir")
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    /// Runs the binary here with stdin from /dev/null.
    pub fn run(&self, args: &[&str]) -> Out {
        run_in(self.root(), args, Input::Null)
    }

    /// Runs the binary here with stdin from /dev/null and extra environment variables.
    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Out {
        run_in_env(self.root(), args, Input::Null, env)
    }

    /// Runs the binary here with `bytes` piped into stdin.
    pub fn run_piped(&self, args: &[&str], bytes: &[u8]) -> Out {
        run_in(self.root(), args, Input::Pipe(bytes))
    }

    /// Runs the binary here with stdin redirected from the file `name` in this directory.
    pub fn run_redirected(&self, args: &[&str], name: &str) -> Out {
        let p = self.path(name);
        run_in(self.root(), args, Input::File(&p))
    }

    /// The JSON report at `name`.
    pub fn report(&self, name: &str) -> Value {
        let text = fs::read_to_string(self.path(name)).unwrap_or_else(|e| panic!("no report at {name}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("report is not JSON ({e}):\n{text}"))
    }

    /// The parsed `.npy` at `name`.
    pub fn npy(&self, name: &str) -> Npy {
        parse_npy(&self.read(name))
    }

    /// The elements of the tool's output at `name`, checked against the output format and shape.
    pub fn output<T: Elem>(&self, name: &str, shape: &[usize]) -> Vec<T> {
        self.npy(name).output_values(shape)
    }
}

impl Default for Dir {
    fn default() -> Self {
        Dir::new()
    }
}

// ---------------------------------------------------------------------------------------------
// Reports
// ---------------------------------------------------------------------------------------------

/// The report keys the contract calls stable.
pub const REPORT_KEYS: [&str; 21] = [
    "schema_version",
    "tool",
    "op",
    "dml_operator",
    "float16_rule",
    "feature_level",
    "support_row",
    "minimum_feature_level",
    "dml",
    "status",
    "valid",
    "error",
    "inputs",
    "output",
    "broadcast",
    "checks",
    "backend",
    "elements",
    "bytes_read",
    "bytes_written",
    "timings_ms",
];

/// The timing keys under `timings_ms`.
pub const TIMING_KEYS: [&str; 5] = ["read", "validate", "compute", "write", "total"];

/// Check ids in order, NumPy broadcast mode.
pub const CHECKS_NUMPY: [&str; 7] = [
    "operator_available",
    "datatype_supported",
    "same_datatype",
    "broadcastable",
    "dimension_count",
    "nonzero_sizes",
    "element_count",
];

/// Check ids in order, `--broadcast none`.
pub const CHECKS_NONE: [&str; 7] = [
    "operator_available",
    "datatype_supported",
    "same_datatype",
    "same_sizes",
    "dimension_count",
    "nonzero_sizes",
    "element_count",
];

/// Panics unless every contract key is present.
pub fn assert_report_keys(report: &Value) {
    let obj = report.as_object().expect("report is a JSON object");
    for k in REPORT_KEYS {
        assert!(obj.contains_key(k), "report lacks key {k:?}: {report:#}");
    }
}

/// The ids of the report's checks, in order.
pub fn check_ids(report: &Value) -> Vec<String> {
    report["checks"]
        .as_array()
        .expect("checks is a list")
        .iter()
        .map(|c| c["id"].as_str().expect("check id").to_string())
        .collect()
}

/// The status of check `id` (panics when the check is absent).
pub fn check_status(report: &Value, id: &str) -> String {
    let checks = report["checks"].as_array().expect("checks is a list");
    let c = checks
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("report has no check {id:?}: {:#}", report["checks"]));
    c["status"].as_str().expect("check status").to_string()
}

/// The message of check `id`.
pub fn check_message(report: &Value, id: &str) -> String {
    let checks = report["checks"].as_array().expect("checks is a list");
    let c = checks.iter().find(|c| c["id"] == id).unwrap_or_else(|| panic!("report has no check {id:?}"));
    c["message"].as_str().expect("check message").to_string()
}

/// Asserts the report lists exactly these seven checks in this order, each with a valid status
/// and a non-empty message.
pub fn assert_seven_checks(report: &Value, ids: &[&str; 7]) {
    assert_eq!(check_ids(report), ids.to_vec(), "check ids and order");
    for c in report["checks"].as_array().unwrap() {
        let st = c["status"].as_str().expect("status is a string");
        assert!(["pass", "fail", "skip"].contains(&st), "bad check status {st:?}");
        let msg = c["message"].as_str().expect("message is a string");
        assert!(!msg.trim().is_empty(), "check {} has an empty message", c["id"]);
    }
}

/// Asserts the named checks have the given statuses.
pub fn assert_checks(report: &Value, expected: &[(&str, &str)]) {
    for (id, st) in expected {
        assert_eq!(check_status(report, id), *st, "check {id}; checks: {:#}", report["checks"]);
    }
}

/// Asserts check `id` is `pass` or `skip` (for checks the contract lets an implementation skip
/// when an earlier failure leaves nothing to evaluate).
pub fn assert_pass_or_skip(report: &Value, id: &str) {
    let st = check_status(report, id);
    assert!(st == "pass" || st == "skip", "check {id} should be pass or skip, was {st}");
}

/// The JSON numbers of a list, as u64.
pub fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|x| x.as_u64().unwrap_or_else(|| panic!("not a count: {x}")))
        .collect()
}

/// Makes a FIFO at `path` (a private special file, never the system's devices).
#[cfg(unix)]
pub fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path without NUL");
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo: {}", std::io::Error::last_os_error());
}
