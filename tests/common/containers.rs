//! Builders for `.safetensors` and `.npz` test inputs, written byte by byte so that a test can
//! make any lie a hostile file could tell (sizes, offsets, CRCs, names), and readers of the
//! containers tensorop writes.

use std::collections::BTreeMap;

/// A `.safetensors` file: `members` are (name, dtype, shape, data bytes), laid out in order.
pub fn safetensors(members: &[(&str, &str, &[usize], Vec<u8>)]) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (name, dtype, shape, bytes) in members {
        let start = data.len();
        data.extend_from_slice(bytes);
        header.insert(
            name.to_string(),
            serde_json::json!({ "dtype": dtype, "shape": shape, "data_offsets": [start, data.len()] }),
        );
    }
    safetensors_raw(&serde_json::to_string(&header).expect("json"), &data)
}

/// A `.safetensors` file with the header text `json` as given, then `data`.
pub fn safetensors_raw(json: &str, data: &[u8]) -> Vec<u8> {
    let mut text = json.as_bytes().to_vec();
    while !text.len().is_multiple_of(8) {
        text.push(b' ');
    }
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&text);
    out.extend_from_slice(data);
    out
}

/// One entry of a hand-made zip.
pub struct Entry {
    pub name: String,
    pub data: Vec<u8>,
    pub deflate: bool,
    /// Overrides of what the directory declares.
    pub declared_size: Option<u32>,
    pub declared_crc: Option<u32>,
}

impl Entry {
    pub fn stored(name: &str, data: Vec<u8>) -> Entry {
        Entry { name: name.into(), data, deflate: false, declared_size: None, declared_crc: None }
    }
    pub fn deflated(name: &str, data: Vec<u8>) -> Entry {
        Entry { deflate: true, ..Entry::stored(name, data) }
    }
}

/// A zip archive of `entries` (no zip64), as `np.savez` lays one out.
pub fn zip(entries: &[Entry]) -> Vec<u8> {
    use std::io::Write;
    let mut out = Vec::new();
    let mut central = Vec::new();
    for e in entries {
        let body = if e.deflate {
            let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(&e.data).expect("deflate");
            enc.finish().expect("deflate")
        } else {
            e.data.clone()
        };
        let crc = e.declared_crc.unwrap_or_else(|| crc32fast::hash(&e.data));
        let size = e.declared_size.unwrap_or(e.data.len() as u32);
        let method: u16 = if e.deflate { 8 } else { 0 };
        let offset = out.len() as u32;
        let mut fields = Vec::new();
        fields.extend_from_slice(&20u16.to_le_bytes()); // version needed
        fields.extend_from_slice(&0u16.to_le_bytes()); // flags
        fields.extend_from_slice(&method.to_le_bytes());
        fields.extend_from_slice(&[0, 0, 0x21, 0]); // time, date
        fields.extend_from_slice(&crc.to_le_bytes());
        fields.extend_from_slice(&(body.len() as u32).to_le_bytes());
        fields.extend_from_slice(&size.to_le_bytes());
        fields.extend_from_slice(&(e.name.len() as u16).to_le_bytes());
        fields.extend_from_slice(&0u16.to_le_bytes()); // extra
        out.extend_from_slice(b"PK\x03\x04");
        out.extend_from_slice(&fields);
        out.extend_from_slice(e.name.as_bytes());
        out.extend_from_slice(&body);
        central.extend_from_slice(b"PK\x01\x02");
        central.extend_from_slice(&20u16.to_le_bytes()); // version made by
        central.extend_from_slice(&fields);
        central.extend_from_slice(&[0; 6]); // comment length, disk, internal attributes
        central.extend_from_slice(&[0; 4]); // external attributes
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(e.name.as_bytes());
    }
    let cd_offset = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(b"PK\x05\x06");
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// The members of a `.safetensors` file: name -> (dtype, shape, data bytes).
pub fn read_safetensors(bytes: &[u8]) -> BTreeMap<String, (String, Vec<u64>, Vec<u8>)> {
    let n = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).expect("header json");
    let data = &bytes[8 + n..];
    let mut out = BTreeMap::new();
    for (name, info) in header.as_object().expect("object") {
        if name == "__metadata__" {
            continue;
        }
        let offs: Vec<usize> =
            info["data_offsets"].as_array().expect("offsets").iter().map(|v| v.as_u64().unwrap() as usize).collect();
        let shape = info["shape"].as_array().expect("shape").iter().map(|v| v.as_u64().unwrap()).collect();
        out.insert(
            name.clone(),
            (info["dtype"].as_str().expect("dtype").to_string(), shape, data[offs[0]..offs[1]].to_vec()),
        );
    }
    out
}

/// The members of an `.npz` file tensorop wrote: name (without `.npy`) -> the `.npy` bytes.
pub fn read_npz(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    use std::io::Read;
    let mut archive = ::zip::ZipArchive::new(std::io::Cursor::new(bytes)).expect("a zip archive");
    let mut out = BTreeMap::new();
    for i in 0..archive.len() {
        let mut f = archive.by_index(i).expect("member");
        let name = f.name().expect("name").trim_end_matches(".npy").to_string();
        let mut data = Vec::new();
        f.read_to_end(&mut data).expect("read member");
        out.insert(name, data);
    }
    out
}

/// Little-endian bytes of float32 values.
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The null device's name, which a container run takes as "summarise only".
pub const NULL: &str = if cfg!(windows) { "NUL" } else { "/dev/null" };
