//! Fuzz target: reading a `stats` object back, as `tensorop merge-stats` does
//! (`report::merge::summary_from_json`). The first byte picks the dtype; the rest is parsed as
//! JSON. Whatever the bytes, reading must not panic, hang or allocate without bound (a
//! significand of any length, exponents of any size). A summary it accepts must print as JSON
//! that reads back to the same text, and merged into an empty summary of its kind it must stay
//! the same, key for key.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tensorop::dtype::DType;
use tensorop::report::merge::summary_from_json;
use tensorop::summary::Summary;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let dtype = DType::ALL[usize::from(pick) % DType::ALL.len()];
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(rest) else { return };
    let Ok(summary) = summary_from_json(&value, dtype) else { return };
    let text = serde_json::to_string(&summary).expect("a summary serialises");
    let back: serde_json::Value = serde_json::from_str(&text).expect("its JSON parses");
    let again = summary_from_json(&back, dtype).expect("a summary's own JSON reads back");
    assert_eq!(serde_json::to_string(&again).expect("serialises"), text, "read back differently");
    let mut merged = Summary::empty(dtype.is_float());
    merged.merge(&summary, dtype.is_float()).expect("one summary merges");
    assert_eq!(serde_json::to_string(&merged).expect("serialises"), text, "merging into nothing changed it");
});
