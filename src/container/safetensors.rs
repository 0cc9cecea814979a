//! `.safetensors`: an 8-byte little-endian header length N, N bytes of JSON (an object of
//! tensors `{"dtype", "shape", "data_offsets": [begin, end]}` and an optional `__metadata__`
//! object of strings), then the tensors' bytes. The header rules are the format's own, applied by
//! its reference implementation (the `safetensors` crate): byte ranges contiguous from 0, in
//! order, each exactly as long as its dtype and shape say, no overflow, a header of at most 100
//! MB. tensorop adds what that leaves open: the header length must lie within the file, no name
//! may appear twice, and the data must end exactly at the end of the file.
//!
//! Writing: [`header`] lays out the output's header for members of known dtypes and shapes.

use super::{check_member_name, Container, Format, Location, Member};
use crate::dtype::DType;
use crate::npy::header::{ByteOrder, FileDType};
use anyhow::{anyhow, bail, Context, Result};
use safetensors::tensor::{Dtype, Metadata};
use std::fs::File;

/// The format's cap on the header's length (the reference implementation's `MAX_HEADER_SIZE`).
const MAX_HEADER: u64 = 100_000_000;

/// Opens a `.safetensors` file: header read and checked against the file's size.
pub fn open(label: &str, file: File) -> Result<Container> {
    // The caller names the input (`input A (a.safetensors)`); messages here name the rule.
    let size = file.metadata().context("cannot inspect the file")?.len();
    let fail = |rule: String| anyhow!("not a valid .safetensors file: {rule}");
    if size < 8 {
        return Err(fail(format!("the file is {size} bytes, shorter than the 8-byte header length")));
    }
    let mut len8 = [0u8; 8];
    crate::sys::read_exact_at(&file, &mut len8, 0).context("cannot read the header")?;
    let n = u64::from_le_bytes(len8);
    if n > size - 8 {
        return Err(fail(format!(
            "the header length is {n} bytes but only {} bytes follow it; the file is truncated or not safetensors",
            size - 8
        )));
    }
    if n > MAX_HEADER {
        return Err(fail(format!("the header length is {n} bytes, more than the format's {MAX_HEADER}-byte limit")));
    }
    let mut text = vec![0u8; n as usize];
    crate::sys::read_exact_at(&file, &mut text, 8).context("cannot read the header")?;
    if let Some(dup) = duplicate_key(&text) {
        return Err(fail(format!("the tensor name {dup:?} appears twice in the header")));
    }
    let meta: Metadata = serde_json::from_slice(&text).map_err(|e| fail(format!("header: {e}")))?;
    let data_len = meta.data_len() as u64;
    let data_start = 8 + n;
    // `data_len` is what the header claims: near 2^64 the sum overflows, which is truncation too.
    let data_end = data_start.checked_add(data_len);
    if data_end != Some(size) {
        let rule = if data_end.is_none_or(|e| e > size) {
            format!(
                "the header describes {data_len} bytes of tensor data but only {} bytes follow it; the file is truncated",
                size - data_start
            )
        } else {
            format!(
                "{} bytes follow the last tensor's data; the header and the data disagree",
                size - data_start - data_len
            )
        };
        return Err(fail(rule));
    }
    let infos = meta.tensors();
    let mut members = Vec::with_capacity(infos.len());
    // The file's order: by byte range, then by name, since empty tensors share their offsets
    // and the header's own order is not kept by its parser (the order must not vary by run).
    let mut names = meta.offset_keys();
    names.sort_by_cached_key(|name| (infos.get(name).map(|i| i.data_offsets), name.clone()));
    for name in names {
        let Some(info) = infos.get(&name) else { continue };
        check_member_name(&name).map_err(|rule| fail(format!("tensor {name:?}: {rule}")))?;
        if info.dtype.bitsize() % 8 != 0 {
            return Err(fail(format!(
                "tensor {name:?} is {:?}, {} bits per element, which tensorop cannot read (whole bytes only)",
                info.dtype,
                info.dtype.bitsize()
            )));
        }
        let (dtype, item_size) = file_dtype(info.dtype);
        let start = data_start + info.data_offsets.0 as u64;
        members.push(Member {
            location: Location::Raw { start, dtype: dtype.clone(), item_size },
            dtype,
            shape: info.shape.iter().map(|&d| d as u64).collect(),
            fortran_order: false,
            byte_order: if item_size == 1 { ByteOrder::NotApplicable } else { ByteOrder::Little },
            npy_version: None,
            // The header's own range, checked against the dtype and shape by the format's rules.
            data_bytes: info.data_offsets.1.saturating_sub(info.data_offsets.0) as u64,
            name,
        });
    }
    Ok(Container { label: label.into(), format: Format::Safetensors, members, file, size, bytes_read: data_start })
}

/// The first key of the header's top-level object that appears twice, if any (JSON parsers,
/// the format's reference one included, keep the last and drop the first silently).
fn duplicate_key(text: &[u8]) -> Option<String> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
            let mut seen = std::collections::HashSet::new();
            while let Some(key) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                if !seen.insert(key.clone()) {
                    return Ok(Some(key));
                }
            }
            Ok(None)
        }
    }
    // A header that is not an object is reported by the real parse that follows.
    serde_json::Deserializer::from_slice(text).deserialize_map(Keys).ok().flatten()
}

/// tensorop's dtype for a safetensors dtype, and its size in bytes; the ones tensorop cannot
/// compute keep their safetensors name, for the checks to refuse by name.
fn file_dtype(d: Dtype) -> (FileDType, u64) {
    let numeric = match d {
        Dtype::F16 => Some(DType::F16),
        Dtype::BF16 => Some(DType::BF16),
        Dtype::F32 => Some(DType::F32),
        Dtype::F64 => Some(DType::F64),
        Dtype::I8 => Some(DType::I8),
        Dtype::I16 => Some(DType::I16),
        Dtype::I32 => Some(DType::I32),
        Dtype::I64 => Some(DType::I64),
        Dtype::U8 => Some(DType::U8),
        Dtype::U16 => Some(DType::U16),
        Dtype::U32 => Some(DType::U32),
        Dtype::U64 => Some(DType::U64),
        _ => None,
    };
    let bits = d.bitsize() as u64;
    match numeric {
        Some(t) => (FileDType::Numeric(t), t.size() as u64),
        None => (FileDType::Other(format!("{d:?} (safetensors)")), bits.div_ceil(8)),
    }
}

/// The safetensors name of a dtype tensorop writes.
pub fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::F16 => "F16",
        DType::BF16 => "BF16",
        DType::F32 => "F32",
        DType::F64 => "F64",
        DType::I8 => "I8",
        DType::I16 => "I16",
        DType::I32 => "I32",
        DType::I64 => "I64",
        DType::U8 => "U8",
        DType::U16 => "U16",
        DType::U32 => "U32",
        DType::U64 => "U64",
    }
}

/// The 8-byte length and the JSON header of a `.safetensors` file holding `members` (name,
/// dtype, shape) in this order, padded with spaces to a multiple of 8 bytes as the reference
/// writer does, so that the data starts aligned. Returns the bytes and each member's data size.
pub fn header(members: &[(String, DType, Vec<u64>)]) -> Result<(Vec<u8>, Vec<u64>)> {
    let mut map = serde_json::Map::new();
    let mut at = 0u64;
    let mut sizes = Vec::with_capacity(members.len());
    for (name, dtype, shape) in members {
        let bytes = shape
            .iter()
            .try_fold(dtype.size() as u64, |n, &d| n.checked_mul(d))
            .ok_or_else(|| anyhow!("member {name}: the result would be larger than 2^64 bytes"))?;
        let end = at.checked_add(bytes).ok_or_else(|| anyhow!("the output would be larger than 2^64 bytes"))?;
        map.insert(
            name.clone(),
            serde_json::json!({ "dtype": dtype_name(*dtype), "shape": shape, "data_offsets": [at, end] }),
        );
        sizes.push(bytes);
        at = end;
    }
    let mut text = serde_json::to_vec(&map)?;
    while !text.len().is_multiple_of(8) {
        text.push(b' ');
    }
    if text.len() as u64 > MAX_HEADER {
        bail!("the output's header would be {} bytes, more than the format's {MAX_HEADER}-byte limit", text.len());
    }
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&text);
    Ok((out, sizes))
}
