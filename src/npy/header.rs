//! `.npy` headers: reading the preamble (magic, version 1.0/2.0/3.0, header length), parsing
//! the header dict (`descr`, `fortran_order`, `shape`) with overflow-checked sizes, and
//! producing the header tensorop writes. The dict text is parsed by [`super::literal`] (in
//! linear time, nesting bounded); type strings by npyz's `TypeStr`; record dtypes are described
//! with npyz's `DType`.

use crate::dtype::DType;
use crate::shape::element_count;
use anyhow::{anyhow, bail, Context, Result};
use npyz::{Endianness, TypeChar, TypeStr};
use py_literal::Value;
use std::io::Read;

/// The magic string every `.npy` file starts with.
pub const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Longest header text accepted from a stream whose size is unknown. NumPy itself refuses
/// headers over 10 000 bytes unless asked; this leaves room for wide record dtypes.
pub const MAX_STREAM_HEADER: u64 = 1 << 20;

/// Byte order of the file's elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    Little,
    Big,
    /// `|`: single-byte elements, where order does not apply.
    NotApplicable,
    /// A structured dtype with a multi-byte field: each field has its own byte order, which
    /// the dtype's name spells (`structured (a: >f8, b: <i2)`).
    PerField,
}

impl ByteOrder {
    pub fn name(self) -> &'static str {
        match self {
            ByteOrder::Little => "little",
            ByteOrder::Big => "big",
            ByteOrder::NotApplicable => "not_applicable",
            ByteOrder::PerField => "per_field",
        }
    }

    /// As `tensorop info` words it: `little byte order`, `big byte order`, or `no byte order
    /// (1-byte elements)` where order does not apply.
    pub fn describe(self) -> &'static str {
        match self {
            ByteOrder::Little => "little byte order",
            ByteOrder::Big => "big byte order",
            ByteOrder::NotApplicable => "no byte order (1-byte elements)",
            ByteOrder::PerField => "byte order per field",
        }
    }

    /// Whether elements must be byte-swapped to be read on this machine.
    pub fn needs_swap(self) -> bool {
        match self {
            ByteOrder::Little => cfg!(target_endian = "big"),
            ByteOrder::Big => cfg!(target_endian = "little"),
            ByteOrder::NotApplicable | ByteOrder::PerField => false,
        }
    }
}

/// The element type a file declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileDType {
    /// One of the eleven numeric dtypes tensorop computes on.
    Numeric(DType),
    /// Anything else (bool, complex, strings, records...), by NumPy's name.
    Other(String),
}

impl FileDType {
    pub fn name(&self) -> String {
        match self {
            FileDType::Numeric(d) => d.name().to_string(),
            FileDType::Other(s) => s.clone(),
        }
    }
}

/// A parsed and size-checked `.npy` header.
#[derive(Debug, Clone)]
pub struct Header {
    pub version: (u8, u8),
    pub dtype: FileDType,
    pub byte_order: ByteOrder,
    pub fortran_order: bool,
    pub shape: Vec<u64>,
    /// Bytes before the data region (preamble and header text).
    pub data_offset: u64,
    pub item_size: u64,
    pub elements: u64,
    /// `elements * item_size`, checked for overflow.
    pub data_bytes: u64,
}

impl Header {
    pub fn version_string(&self) -> String {
        format!("{}.{}", self.version.0, self.version.1)
    }
}

/// Reads and parses a header from `r`, which must be at the start of the file. At most
/// `max_header` bytes of header text are read (the caller bounds it by the file's real size).
pub fn read_header(r: &mut impl Read, max_header: u64) -> Result<Header> {
    let mut pre = [0u8; 8];
    r.read_exact(&mut pre).map_err(|e| short_read(e, "the file is shorter than the 10-byte .npy preamble"))?;
    if &pre[..6] != MAGIC {
        bail!("not a .npy file: bad magic (the file must start with \\x93NUMPY)");
    }
    let version = (pre[6], pre[7]);
    let (len_bytes, utf8) = match version {
        (1, 0) => (2, false),
        (2, 0) => (4, false),
        (3, 0) => (4, true),
        (a, b) => bail!("unsupported .npy format version {a}.{b} (tensorop reads 1.0, 2.0 and 3.0)"),
    };
    let mut len = [0u8; 4];
    r.read_exact(&mut len[..len_bytes]).map_err(|e| short_read(e, "the file ends inside the .npy preamble"))?;
    let header_len = u64::from(u32::from_le_bytes(len));
    if header_len > max_header {
        bail!(
            "the header claims {header_len} bytes but only {max_header} can follow the preamble \
             (the header length field is corrupt or the file is truncated)"
        );
    }
    let mut text = vec![0u8; header_len as usize];
    r.read_exact(&mut text).map_err(|e| short_read(e, "the file ends inside the header"))?;
    let data_offset = 8 + len_bytes as u64 + header_len;
    let decoded = if utf8 {
        std::str::from_utf8(&text)
            .map_err(|_| anyhow!("unparsable header: version 3.0 headers must be UTF-8"))?
            .to_string()
    } else {
        text.iter().map(|&b| char::from(b)).collect()
    };
    parse_dict(&decoded, version, data_offset)
}

fn short_read(e: std::io::Error, what: &str) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        anyhow!("{what}")
    } else {
        anyhow::Error::new(e)
    }
}

fn parse_dict(text: &str, version: (u8, u8), data_offset: u64) -> Result<Header> {
    let value = super::literal::parse(text.trim_end_matches(['\n', ' ', '\0']))
        .map_err(|e| anyhow!("unparsable header: not a Python dict literal ({e})"))?;
    let Value::Dict(entries) = value else {
        bail!("unparsable header: expected a dict with keys 'descr', 'fortran_order', 'shape'");
    };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    for (k, v) in entries {
        match k.as_string().map(String::as_str) {
            Some("descr") => descr = Some(v),
            Some("fortran_order") => fortran = Some(v),
            Some("shape") => shape = Some(v),
            _ => bail!("unparsable header: unexpected key {k} (a .npy header has exactly 'descr', 'fortran_order' and 'shape')"),
        }
    }
    let missing = |k| anyhow!("unparsable header: the key '{k}' is missing");
    let fortran_order = match fortran.ok_or_else(|| missing("fortran_order"))? {
        Value::Boolean(b) => b,
        other => bail!("unparsable header: 'fortran_order' must be True or False, not {other}"),
    };
    let shape = parse_shape(&shape.ok_or_else(|| missing("shape"))?)?;
    let descr = descr.ok_or_else(|| missing("descr"))?;
    let elements = element_count(&shape)
        .ok_or_else(|| anyhow!("the shape {shape:?} overflows a 64-bit element count (corrupt header)"))?;
    let (dtype, byte_order, item_size) = match &descr {
        Value::String(s) => parse_type_str(s)?,
        Value::List(_) => parse_record(&descr)?,
        other => bail!("unparsable header: 'descr' must be a type string or a list of fields, not {other}"),
    };
    let data_bytes = elements.checked_mul(item_size).ok_or_else(|| {
        anyhow!("the shape {shape:?} of {item_size}-byte elements overflows a 64-bit byte count (corrupt header)")
    })?;
    Ok(Header { version, dtype, byte_order, fortran_order, shape, data_offset, item_size, elements, data_bytes })
}

fn parse_shape(v: &Value) -> Result<Vec<u64>> {
    let items = match v {
        Value::Tuple(items) | Value::List(items) => items,
        other => bail!("unparsable header: 'shape' must be a tuple of integers, not {other}"),
    };
    items
        .iter()
        .map(|d| match d {
            Value::Integer(n) => match n.to_u64_digits() {
                (num_bigint::Sign::Minus, _) => bail!("unparsable header: negative dimension {n} in 'shape'"),
                (_, digits) if digits.len() <= 1 => Ok(digits.first().copied().unwrap_or(0)),
                _ => bail!("the dimension {n} in 'shape' does not fit in 64 bits (corrupt header)"),
            },
            other => bail!("unparsable header: dimension {other} in 'shape' is not an integer"),
        })
        .collect()
}

/// Parses a scalar type string such as `<f4`, `>i8`, `|u1`, `=f2` or `<U3`.
fn parse_type_str(s: &str) -> Result<(FileDType, ByteOrder, u64)> {
    let native = if cfg!(target_endian = "little") { '<' } else { '>' };
    let mut chars = s.chars();
    let (order, rest) = match chars.next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (c, chars.as_str()),
        _ => ('=', s),
    };
    // npyz's parser knows `<`, `>` and `|`; NumPy's `=` (and an omitted order) mean native.
    let multi_byte = rest.get(1..).and_then(|n| n.parse::<u64>().ok()).is_some_and(|n| n > 1);
    let order = match order {
        '=' => native,
        '|' if multi_byte && !rest.starts_with(['S', 'V', 'a', 'U']) => native,
        c => c,
    };
    let ts: TypeStr =
        format!("{order}{rest}").parse().map_err(|e| anyhow!("unparsable header: invalid type string '{s}' ({e})"))?;
    if ts.uses_pickled_array() {
        bail!(
            "the dtype '{s}' holds pickled Python objects, which tensorop never loads (save a numeric array instead)"
        );
    }
    let item_size =
        ts.num_bytes().ok_or_else(|| anyhow!("unparsable header: the type string '{s}' has no fixed size"))? as u64;
    let byte_order = match ts.endianness() {
        Endianness::Little => ByteOrder::Little,
        Endianness::Big => ByteOrder::Big,
        Endianness::Irrelevant => ByteOrder::NotApplicable,
    };
    let byte_order = if item_size == 1 { ByteOrder::NotApplicable } else { byte_order };
    let kind = match ts.type_char() {
        TypeChar::Int => Some('i'),
        TypeChar::Uint => Some('u'),
        TypeChar::Float => Some('f'),
        _ => None,
    };
    let dtype = match kind.and_then(|k| DType::from_kind_size(k, item_size)) {
        Some(d) => FileDType::Numeric(d),
        None => FileDType::Other(other_name(&ts, item_size, s)),
    };
    Ok((dtype, byte_order, item_size))
}

/// NumPy's name for a dtype tensorop does not compute on.
fn other_name(ts: &TypeStr, item_size: u64, raw: &str) -> String {
    match ts.type_char() {
        TypeChar::Bool => "bool".into(),
        TypeChar::Complex => format!("complex{}", item_size * 8),
        TypeChar::Float => format!("float{}", item_size * 8),
        _ => raw.to_string(),
    }
}

/// A record (structured) dtype: tensorop only needs its size and a truthful name, its fields with
/// their NumPy types (`structured (a: >f8, b: <i2)`), each field's byte order in its type.
fn parse_record(descr: &Value) -> Result<(FileDType, ByteOrder, u64)> {
    let dtype = record_dtype(descr).context("unparsable header: invalid record dtype")?;
    if dtype.uses_pickled_array() {
        bail!("the record dtype holds pickled Python objects, which tensorop never loads");
    }
    let size = dtype.num_bytes().ok_or_else(|| anyhow!("unparsable header: the record dtype has no fixed size"))?;
    let order = if multi_byte(&dtype) { ByteOrder::PerField } else { ByteOrder::NotApplicable };
    Ok((FileDType::Other(field_text(&dtype)), order, size as u64))
}

/// A record dtype as `info` names it: `structured (a: >f8, b: <i2, c: (2,)<f4)`.
fn field_text(dtype: &npyz::DType) -> String {
    match dtype {
        npyz::DType::Plain(ts) => ts.to_string(),
        npyz::DType::Array(..) => {
            // NumPy's subarray spelling: `(2, 3)<i4`.
            let (mut dims, mut inner) = (Vec::new(), dtype);
            while let npyz::DType::Array(n, next) = inner {
                dims.push(n.to_string());
                inner = next;
            }
            let dims = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
            format!("{dims}{}", field_text(inner))
        }
        npyz::DType::Record(fields) => {
            let list: Vec<String> = fields.iter().map(|f| format!("{}: {}", f.name, field_text(&f.dtype))).collect();
            format!("structured ({})", list.join(", "))
        }
    }
}

/// Whether some field has elements of more than one byte, so that byte order matters.
fn multi_byte(dtype: &npyz::DType) -> bool {
    match dtype {
        npyz::DType::Plain(ts) => ts.num_bytes().is_some_and(|n| n > 1) && ts.endianness() != Endianness::Irrelevant,
        npyz::DType::Array(_, inner) => multi_byte(inner),
        npyz::DType::Record(fields) => fields.iter().any(|f| multi_byte(&f.dtype)),
    }
}

/// Most dimensions of a record field's subarray (NumPy's own limit is 64); each is one level of
/// npyz's recursive `DType::Array`.
const MAX_FIELD_DIMS: usize = 64;

/// npyz's `DType` for a `descr` value: a type string, or a list of `(name, descr[, shape])`
/// fields (as npyz reads them: lists or tuples, the name a plain string). Nesting is bounded by
/// the literal parser's depth limit, subarray ranks by [`MAX_FIELD_DIMS`].
fn record_dtype(descr: &Value) -> Result<npyz::DType> {
    let fields = match descr {
        Value::String(s) => {
            let ts = s.parse::<TypeStr>().map_err(|e| anyhow!("invalid type string '{s}' ({e})"))?;
            return Ok(npyz::DType::Plain(ts));
        }
        Value::List(fields) => fields,
        other => bail!("a field's type must be a type string or a list of fields, not {other}"),
    };
    let field = |f: &Value| -> Result<npyz::Field> {
        let (Value::List(t) | Value::Tuple(t)) = f else { bail!("a field must be a tuple, not {f}") };
        let (Some(Value::String(name)), Some(inner), 2..=3) = (t.first(), t.get(1), t.len()) else {
            bail!("a field must be (name, type) or (name, type, shape) with a string name, not {f}")
        };
        let mut dtype = record_dtype(inner)?;
        if let Some(shape) = t.get(2) {
            let dims = parse_shape(shape)?;
            if dims.len() > MAX_FIELD_DIMS {
                bail!("the field '{name}' has {} dimensions; at most {MAX_FIELD_DIMS} are supported", dims.len());
            }
            for &d in dims.iter().rev() {
                dtype = npyz::DType::Array(d, Box::new(dtype));
            }
        }
        Ok(npyz::Field { name: name.clone(), dtype })
    };
    Ok(npyz::DType::Record(fields.iter().map(field).collect::<Result<_>>()?))
}

/// The header bytes (preamble included) of a little-endian C-order array: version 1.0 unless
/// the text needs more than 65 535 bytes. The data that follows starts 64-byte aligned.
pub fn encode_header(dtype: DType, shape: &[u64]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape_text = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let dict = format!("{{'descr': '{}', 'fortran_order': False, 'shape': {shape_text}, }}", dtype.npy_descr());
    let build = |len_bytes: usize, version: u8| {
        let unpadded = 6 + 2 + len_bytes + dict.len() + 1;
        let pad = (64 - unpadded % 64) % 64;
        let text_len = dict.len() + pad + 1;
        let mut out = Vec::with_capacity(unpadded + pad);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[version, 0]);
        if len_bytes == 2 {
            out.extend_from_slice(&(text_len as u16).to_le_bytes());
        } else {
            out.extend_from_slice(&(text_len as u32).to_le_bytes());
        }
        out.extend_from_slice(dict.as_bytes());
        out.resize(out.len() + pad, b' ');
        out.push(b'\n');
        out
    };
    let v1 = build(2, 1);
    if v1.len() - 10 <= usize::from(u16::MAX) {
        v1
    } else {
        build(4, 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn npy(version: u8, dict: &str) -> Vec<u8> {
        let mut v = MAGIC.to_vec();
        v.extend_from_slice(&[version, 0]);
        if version == 1 {
            v.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        } else {
            v.extend_from_slice(&(dict.len() as u32).to_le_bytes());
        }
        v.extend_from_slice(dict.as_bytes());
        v
    }

    fn parse(version: u8, dict: &str) -> Result<Header> {
        let bytes = npy(version, dict);
        read_header(&mut Cursor::new(&bytes), bytes.len() as u64)
    }

    #[test]
    fn parses_every_version_and_order() {
        for v in [1, 2, 3] {
            let h = parse(v, "{'descr': '>i2', 'fortran_order': True, 'shape': (3, 4), }\n").unwrap();
            assert_eq!(h.version, (v, 0));
            assert_eq!(h.dtype, FileDType::Numeric(DType::I16));
            assert_eq!(h.byte_order, ByteOrder::Big);
            assert!(h.fortran_order);
            assert_eq!((h.shape.clone(), h.elements, h.data_bytes), (vec![3, 4], 12, 24));
        }
        let h = parse(1, "{'descr': '=f2', 'fortran_order': False, 'shape': ()}").unwrap();
        assert_eq!((h.dtype, h.byte_order, h.elements), (FileDType::Numeric(DType::F16), ByteOrder::Little, 1));
        let dict = "{'shape': (5,), 'descr': '|u1', 'fortran_order': False}";
        let h = parse(1, dict).unwrap();
        assert_eq!((h.byte_order, h.data_offset), (ByteOrder::NotApplicable, 10 + dict.len() as u64));
    }

    #[test]
    fn names_other_dtypes() {
        let name = |d: &str| match parse(1, &format!("{{'descr': {d}, 'fortran_order': False, 'shape': (2,)}}"))
            .unwrap()
            .dtype
        {
            FileDType::Other(s) => s,
            FileDType::Numeric(d) => panic!("{d} is numeric"),
        };
        assert_eq!(name("'|b1'"), "bool");
        assert_eq!(name("'<c8'"), "complex64");
        assert_eq!(name("'<U3'"), "<U3");
        assert_eq!(name("'<f16'"), "float128");
        assert_eq!(name("[('a', '<i4'), ('b', '>f8')]"), "structured (a: <i4, b: >f8)");
        let h = parse(1, "{'descr': [('a', '<i4'), ('b', '<f8')], 'fortran_order': False, 'shape': (2,)}").unwrap();
        assert_eq!(h.data_bytes, 24);
    }

    #[test]
    fn bar_order_means_native_for_multi_byte_numbers_only() {
        // NumPy writes `|` only for one-byte and byte-string types; other writers put it on any
        // type. A multi-byte number then has the machine's byte order; strings and raw bytes
        // keep `|`.
        let h = |descr: &str| {
            let h = parse(1, &format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (2,)}}")).unwrap();
            (h.dtype, h.byte_order, h.item_size)
        };
        assert_eq!(h("|f4"), (FileDType::Numeric(DType::F32), ByteOrder::Little, 4));
        assert_eq!(h("|i8"), (FileDType::Numeric(DType::I64), ByteOrder::Little, 8));
        assert_eq!(h("|f2"), (FileDType::Numeric(DType::F16), ByteOrder::Little, 2));
        assert_eq!(h("|u1"), (FileDType::Numeric(DType::U8), ByteOrder::NotApplicable, 1));
        assert_eq!(h("|i1"), (FileDType::Numeric(DType::I8), ByteOrder::NotApplicable, 1));
        assert_eq!(h("|S5"), (FileDType::Other("|S5".into()), ByteOrder::NotApplicable, 5));
        assert_eq!(h("|V8"), (FileDType::Other("|V8".into()), ByteOrder::NotApplicable, 8));
        assert_eq!(h("|a3"), (FileDType::Other("|a3".into()), ByteOrder::NotApplicable, 3));
        assert_eq!(h("<U3").2, 12);
    }

    #[test]
    fn rejects_malformed_headers_with_reasons() {
        let err = |bytes: &[u8]| read_header(&mut Cursor::new(bytes), 1 << 20).unwrap_err().to_string();
        assert!(err(b"PK\x03\x04 zip file").contains("bad magic"));
        assert!(err(b"\x93NU").contains("shorter"));
        let mut v4 = npy(1, "{}");
        v4[6] = 4;
        assert!(err(&v4).contains("unsupported .npy format version 4.0"));
        let e = |dict: &str| parse(1, dict).unwrap_err().to_string();
        assert!(e("{'descr': '<f4', 'fortran_order': False, 'shape': (2,").contains("unparsable"));
        assert!(e("{'descr': '<f4', 'shape': (2,)}").contains("'fortran_order' is missing"));
        assert!(e("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}").contains("negative"));
        assert!(e("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 8)}").contains("overflow"));
        assert!(e("{'descr': '<f4', 'fortran_order': False, 'shape': (18446744073709551616,)}").contains("64 bits"));
        assert!(e("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904)}")
            .contains("64-bit"));
        assert!(e("{'descr': '|O', 'fortran_order': False, 'shape': (2,)}").contains("pickled"));
        assert!(e("{'descr': '<q7', 'fortran_order': False, 'shape': (2,)}").contains("invalid type string"));
        assert!(e("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}").contains("True or False"));
        assert!(e("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}").contains("unexpected key"));
        // A header length beyond what the file holds.
        let bytes = npy(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}");
        let short = read_header(&mut Cursor::new(&bytes), 10).unwrap_err().to_string();
        assert!(short.contains("claims"), "{short}");
    }

    #[test]
    fn describes_records_by_their_fields() {
        let h = parse(
            1,
            "{'descr': [('a', '<i4', (2, 3)), ('b', [('c', '|u1'), ('', '|V3')])], 'fortran_order': False, \
             'shape': (2,), }",
        )
        .unwrap();
        assert_eq!(h.item_size, 24 + 4);
        assert_eq!(h.dtype.name(), "structured (a: (2, 3)<i4, b: structured (c: |u1, : |V3))");
        assert_eq!(h.byte_order, ByteOrder::PerField);
        let e = |descr: &str| {
            let e = parse(1, &format!("{{'descr': {descr}, 'fortran_order': False, 'shape': (2,)}}")).unwrap_err();
            format!("{e:#}")
        };
        assert!(e("[('a', '|O')]").contains("pickled"));
        assert!(e("[('a', '<i4', 3)]").contains("must be a tuple"));
        assert!(e("[(('title', 'a'), '<i4')]").contains("string name"));
        assert!(e("[('a', '<i4', (1,) * 2)]").contains("unparsable"));
        let dims = vec!["1"; 65].join(", ");
        assert!(e(&format!("[('a', '<i4', ({dims},))]")).contains("at most 64"));
        let dims = vec!["1"; 64].join(", ");
        let h = parse(1, &format!("{{'descr': [('a', '<i4', ({dims},))], 'fortran_order': False, 'shape': (2,)}}"));
        assert_eq!(h.expect("64 dimensions are NumPy's own limit").item_size, 4);
        let dims = ["4294967296"; 3].join(", ");
        assert!(e(&format!("[('a', '<i4', ({dims},))]")).contains("no fixed size"));
    }

    /// Found by the fuzzer: `py_literal`'s grammar backtracked exponentially on nested brackets,
    /// so a 300-byte header with 100 `[` ran for minutes.
    #[test]
    fn nested_brackets_fail_fast() {
        let start = std::time::Instant::now();
        for open in ["[", "{", "(", "{'a': [(", "[('a', "] {
            for depth in [10, 20, 31, 100, 10_000] {
                let descr = open.repeat(depth);
                let e = parse(1, &format!("{{'descr': {descr}, 'fortran_order': False, 'shape': (2,)}}")).unwrap_err();
                assert!(e.to_string().contains("unparsable"), "{e}");
            }
        }
        let closed =
            format!("{{'descr': {}'<f4'{}, 'fortran_order': False, 'shape': ()}}", "[".repeat(30), "]".repeat(30));
        assert!(format!("{:#}", parse(1, &closed).unwrap_err()).contains("invalid record dtype"));
        assert!(start.elapsed() < std::time::Duration::from_secs(2), "{:?}", start.elapsed());
    }

    #[test]
    fn encoded_headers_parse_back_aligned() {
        for shape in [vec![], vec![5], vec![8, 7, 6, 5]] {
            // bfloat16 has no .npy type (its raw values are never written as .npy).
            for d in DType::ALL.into_iter().filter(|d| d.in_npy()) {
                let bytes = encode_header(d, &shape);
                assert_eq!(bytes.len() % 64, 0);
                let h = read_header(&mut Cursor::new(&bytes), bytes.len() as u64).unwrap();
                assert_eq!((h.dtype, h.shape, h.version), (FileDType::Numeric(d), shape.clone(), (1, 0)));
                assert_eq!(h.data_offset, bytes.len() as u64);
            }
        }
        // Byte for byte what NumPy writes: the shortest padding, with spaces, then a newline.
        let dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
        let numpy = [&b"\x93NUMPY\x01\x00\x76\x00"[..], dict.as_bytes(), &[b' '; 58], b"\n"].concat();
        assert_eq!(encode_header(DType::F32, &[2, 3]), numpy);
        // Version 1.0 as long as its length field (the text after the first 10 bytes) fits in
        // 16 bits: shapes of 1s whose header crosses that bound, one dimension at a time.
        let mut versions = [0; 3];
        for rank in 21_790..21_840 {
            let bytes = encode_header(DType::U8, &vec![1; rank]);
            let dict_len =
                format!("{{'descr': '|u1', 'fortran_order': False, 'shape': ({}), }}", vec!["1"; rank].join(", "))
                    .len();
            let v1_text = (10 + dict_len + 1).div_ceil(64) * 64 - 10;
            let want = if v1_text <= usize::from(u16::MAX) { 1 } else { 2 };
            assert_eq!(bytes[6], want, "rank {rank}: a version 1.0 text would be {v1_text} bytes");
            versions[usize::from(want)] += 1;
        }
        assert!(versions[1] > 0 && versions[2] > 0, "the ranks cross the bound: {versions:?}");
        let huge: Vec<u64> = vec![1; 30_000];
        let bytes = encode_header(DType::F32, &huge);
        assert_eq!(bytes.len() % 64, 0, "a version 2.0 header keeps the data aligned too");
        let h = read_header(&mut Cursor::new(&bytes), bytes.len() as u64).unwrap();
        assert_eq!((h.version, h.shape.len()), ((2, 0), 30_000));
        assert_eq!(h.data_offset, bytes.len() as u64);
    }
}
