//! DxDispatch: `--dxdispatch DIR` exports, `tensorop run MODEL.json` and `tensorop compare`.
//! The round trip (export, run the model, compare with `expected.npy`) covers every dtype and
//! rank a DirectML level accepts, broadcast and Fortran inputs included; the model tests pin
//! DxDispatch's semantics (initializers, strides, offsets, in place, print, writeFile) and the
//! refusals (checks exit 3, unsupported parts and malformed or hostile models exit 1).

use crate::common::*;
use serde_json::Value;

/// Values of every dtype from a seed, small enough for every dtype.
fn values(n: usize, seed: u64) -> Vec<u64> {
    (0..n as u64).map(|i| (i.wrapping_mul(2654435761).wrapping_add(seed * 97)) % 100).collect()
}

/// An `.npy` of `dtype` (NumPy name) with `shape`, from `values` (C order), optionally Fortran.
fn npy_of(dtype: &str, shape: &[usize], vals: &[u64], fortran: bool) -> Vec<u8> {
    let layout = if fortran { Layout::fortran() } else { Layout::default() };
    macro_rules! ints {
        ($t:ty) => {
            npy_with(shape, &vals.iter().map(|&v| v as $t).collect::<Vec<$t>>(), layout)
        };
    }
    match dtype {
        "float32" => npy_with(shape, &vals.iter().map(|&v| v as f32 * 0.37 - 11.0).collect::<Vec<f32>>(), layout),
        "float64" => npy_with(shape, &vals.iter().map(|&v| v as f64 * 0.37 - 11.0).collect::<Vec<f64>>(), layout),
        "float16" => npy_with(
            shape,
            &vals.iter().map(|&v| H(half::f16::from_f32(v as f32 * 0.37 - 11.0).to_bits())).collect::<Vec<H>>(),
            layout,
        ),
        "int8" => ints!(i8),
        "int16" => ints!(i16),
        "int32" => ints!(i32),
        "int64" => ints!(i64),
        "uint8" => ints!(u8),
        "uint16" => ints!(u16),
        "uint32" => ints!(u32),
        "uint64" => ints!(u64),
        other => panic!("no dtype {other}"),
    }
}

/// Exports `op` on the inputs, runs the model from inside the repro and checks DirectML's
/// stand-in output against `expected.npy`, bit for bit, and through `compare`.
fn round_trip(op: &str, level: &str, dtype: &str, sa: &[usize], sb: &[usize], fortran: [bool; 2]) {
    let dir = Dir::new();
    let na: usize = sa.iter().product();
    let nb: usize = sb.iter().product();
    dir.write("a.npy", &npy_of(dtype, sa, &values(na, 1), fortran[0]));
    dir.write("b.npy", &npy_of(dtype, sb, &values(nb, 2), fortran[1]));
    let what = format!("{op} {dtype} {sa:?} {sb:?} fortran {fortran:?} at {level}");
    dir.run(&[op, "a.npy", "b.npy", "-f", level, "--dxdispatch", "repro"]).ok();
    let repro = dir.path("repro");
    let mut names: Vec<String> =
        std::fs::read_dir(&repro).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["README.txt", "a.npy", "b.npy", "expected.npy", "model.json"], "{what}");
    for input in ["a.npy", "b.npy"] {
        let n = parse_npy(&std::fs::read(repro.join(input)).unwrap());
        assert!(!n.fortran && n.version.0 <= 3, "{what}: {input} must be C order, version <= 3");
    }
    let out = run_in(&repro, &["run", "model.json", "-f", level], Input::Null);
    out.ok();
    let got = std::fs::read(repro.join("output.npy")).unwrap();
    let want = std::fs::read(repro.join("expected.npy")).unwrap();
    let (g, w) = (parse_npy(&got), parse_npy(&want));
    assert_eq!((g.descr.clone(), g.data.clone()), (w.descr.clone(), w.data.clone()), "{what}");
    let shape_or_one = |s: &[usize]| if s.is_empty() { vec![1] } else { s.to_vec() };
    assert_eq!(g.shape, shape_or_one(&w.shape), "{what}");
    run_in(&repro, &["compare", "output.npy", "expected.npy"], Input::Null).ok();
}

#[test]
fn every_dtype_and_rank_a_level_accepts_round_trips_bit_for_bit() {
    // (level, op, dtypes the level's row lists)
    let cases: [(&str, &str, &[&str]); 5] = [
        ("1_0", "sub", &["float32", "float16"]),
        ("2_1", "sub", &["int32", "uint32"]),
        ("3_1", "sqdiff", &["float32", "float16", "int32", "uint32"]),
        ("4_1", "sub", &["int64", "uint64"]),
        (
            "5_1",
            "sub",
            &["float32", "float16", "int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8"],
        ),
    ];
    for (level, op, dtypes) in cases {
        let rank4_only = matches!(level, "1_0" | "2_1");
        for dtype in dtypes {
            let shapes: Vec<(Vec<usize>, Vec<usize>)> = if rank4_only {
                vec![(vec![2, 3, 4, 5], vec![2, 3, 4, 5]), (vec![3, 4], vec![4]), (vec![], vec![5])]
            } else {
                vec![
                    (vec![7], vec![7]),
                    (vec![2, 3], vec![3]),
                    (vec![2, 1, 4], vec![3, 1]),
                    (vec![1, 2, 1, 2, 1, 2, 1, 3], vec![3]),
                ]
            };
            for (sa, sb) in shapes {
                round_trip(op, level, dtype, &sa, &sb, [false, false]);
            }
        }
    }
    // Every rank from 1 to 8, B broadcast along every other dimension.
    for rank in 1..=8usize {
        let sa: Vec<usize> = (0..rank).map(|k| 2 + k % 2).collect();
        let sb: Vec<usize> = sa.iter().enumerate().map(|(k, &d)| if k % 2 == 0 { 1 } else { d }).collect();
        round_trip("sqdiff", "3_1", "float32", &sa, &sb, [false, false]);
    }
    // Fortran-order inputs, alone and broadcast, are rewritten in C order.
    round_trip("sub", "5_1", "float32", &[3, 4, 5], &[3, 4, 5], [true, false]);
    round_trip("sqdiff", "3_1", "float16", &[4, 5], &[3, 4, 5], [true, true]);
    round_trip("sub", "6_4", "int8", &[2, 3, 4], &[2, 1, 4], [false, true]);
}

#[test]
fn the_repro_carries_the_report_descriptors_and_a_readme() {
    let dir = Dir::new();
    dir.write("a.npy", &npy_of("float32", &[2, 3], &values(6, 1), false));
    dir.write("b.npy", &npy_of("float32", &[3], &values(3, 2), false));
    dir.run(&["sqdiff", "a.npy", "b.npy", "-f", "3_1", "--dxdispatch", "r", "--report", "rep.json"]).ok();
    let report = dir.report("rep.json");
    let final_path = std::path::Path::new("r").join("expected.npy").display().to_string();
    assert_eq!(report["output"]["path"], final_path.as_str(), "the report names where the result ends up");
    let model: Value = serde_json::from_slice(&dir.read("r/model.json")).unwrap();
    let desc = &model["dispatchables"]["sqdiff"]["desc"];
    assert_eq!(model["dispatchables"]["sqdiff"]["type"], "DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE");
    for t in ["ATensor", "BTensor", "OutputTensor"] {
        let want = &report["dml"]["tensors"][t];
        for key in ["DataType", "Sizes", "TotalTensorSizeInBytes", "Flags", "DimensionCount"] {
            assert_eq!(desc[t][key], want[key], "{t}.{key}");
        }
        if want["Strides"].is_null() {
            assert!(desc[t].get("Strides").is_none(), "{t} is packed");
        } else {
            assert_eq!(desc[t]["Strides"], want["Strides"], "{t}.Strides");
        }
    }
    assert_eq!(desc["BTensor"]["Strides"], serde_json::json!([0, 1]));
    let write = &model["commands"][1];
    assert_eq!(write["type"], "writeFile");
    assert_eq!(write["dimensions"], serde_json::json!([2, 3]));
    assert_ne!(write["targetPath"], "a.npy");
    let readme = String::from_utf8(dir.read("r/README.txt")).unwrap();
    assert!(readme.contains("dxdispatch model.json --dml_feature_level 3_1"), "{readme}");
    assert!(readme.contains("tensorop compare output.npy expected.npy"), "{readme}");
}

/// A float16 export under each rule: `expected.npy` follows the rule, the README names it, and
/// `tensorop run` with the README's `--float16` gives the same bits (without it, `nearest`).
#[test]
fn a_float16_export_records_its_rule_and_run_reproduces_it() {
    let dir = Dir::new();
    // 1 - 2^-24, (1 + 2^-9) - 2^-11 and 65504 - (-1): the three differ under each toward-zero
    // rule, and the last between them.
    dir.write("a.npy", &npy(&[3], &[H(0x3c00), H(0x3c02), H(0x7bff)]));
    dir.write("b.npy", &npy(&[3], &[H(0x0001), H(0x1000), H(0xbc00)]));
    let sub = |rule: &str| dir.run(&["sub", "a.npy", "b.npy", "-o", "-", "--float16", rule]).ok().stdout.clone();
    let (inf, sat, nearest) = (sub("toward-zero-inf"), sub("toward-zero-saturate"), sub("nearest"));
    assert!(inf != nearest && sat != nearest && inf != sat);
    for (rule, want) in [("toward-zero-inf", &inf), ("toward-zero-saturate", &sat), ("nearest", &nearest)] {
        let name = format!("repro-{rule}");
        dir.run(&["sub", "a.npy", "b.npy", "--float16", rule, "--dxdispatch", &name, "--report", "r.json"]).ok();
        assert_eq!(dir.report("r.json")["float16_rule"], rule);
        let repro = dir.path(&name);
        assert_eq!(&std::fs::read(repro.join("expected.npy")).unwrap(), want, "expected.npy under {rule}");
        let readme = String::from_utf8(std::fs::read(repro.join("README.txt")).unwrap()).unwrap();
        assert!(readme.contains(&format!("tensorop sub --float16 {rule} (")), "{readme}");
        let run = format!("tensorop run model.json --feature-level 6_4 --float16 {rule}");
        assert!(readme.contains(&run), "{readme}");
        let out = run_in(&repro, &["run", "model.json", "--float16", rule, "--report", "run.json"], Input::Null);
        out.ok();
        assert_eq!(dir.report(&format!("{name}/run.json"))["float16_rule"], rule);
        run_in(&repro, &["compare", "output.npy", "expected.npy"], Input::Null).ok();
    }
    // Without --float16, `run` rounds to nearest: a toward-zero repro's output then differs.
    let repro = dir.path("repro-toward-zero-inf");
    run_in(&repro, &["run", "model.json"], Input::Null).ok();
    run_in(&repro, &["compare", "output.npy", "expected.npy"], Input::Null).expect_code(4);
}

#[test]
fn an_export_is_refused_without_a_directml_job_and_leaves_nothing() {
    let dir = Dir::new();
    dir.write("a.npy", &npy_of("float64", &[3], &values(3, 1), false));
    dir.write("f.npy", &npy_of("float32", &[3], &values(3, 1), false));
    let before = dir.listing();
    dir.run(&["sub", "a.npy", "a.npy", "--dxdispatch", "r"]).expect_code(3).stderr_mentions("datatype_supported");
    dir.run(&["sub", "f.npy", "f.npy", "-f", "none", "--dxdispatch", "r"])
        .expect_code(2)
        .stderr_mentions("feature level");
    // sqdiff does not exist before 3_1.
    dir.run(&["sqdiff", "f.npy", "f.npy", "-f", "3_0", "--dxdispatch", "r"]).expect_code(3);
    assert_eq!(dir.listing(), before, "a refused export writes nothing");
    // An existing directory with files in it is not overwritten.
    std::fs::create_dir(dir.path("full")).unwrap();
    dir.write("full/keep.txt", b"mine");
    dir.run(&["sub", "f.npy", "f.npy", "--dxdispatch", "full"]).expect_code(1).stderr_mentions("exists");
    assert_eq!(dir.read("full/keep.txt"), b"mine");
    // A failure part way (an input that is not .npy) leaves no hidden directory.
    dir.write("bad.npy", b"not an npy");
    dir.run(&["sub", "bad.npy", "f.npy", "--dxdispatch", "r2"]).expect_code(1);
    let mut after = before.clone();
    after.insert("full".into());
    after.insert("bad.npy".into());
    assert_eq!(dir.listing(), after);
}

/// Writes `model` as `model.json` in `dir`.
fn model(dir: &Dir, text: &str) {
    dir.write("model.json", text.as_bytes());
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

#[test]
fn the_repositorys_element_wise_example_runs_with_subtract() {
    let dir = Dir::new();
    dir.write("dml_element_wise_add_input.npy", &npy(&[6], &[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]));
    let raw: Vec<u8> = [10.0f32, 20.0, 30.0, 40.0, 50.0, 60.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    dir.write("dml_element_wise_add_input.dat", &raw);
    model(
        &dir,
        r#"{
  "$schema": "./_schema.json",
  "resources": {
    "A": { "initialValues": { "sourcePath": "dml_element_wise_add_input.npy" } },
    "B": { "initialValuesDataType": "FLOAT32", "initialValues": { "sourcePath": "dml_element_wise_add_input.dat" } },
    "Out": { "initialValuesDataType": "FLOAT32", "initialValues": { "valueCount": 6, "value": 0 } }
  },
  "dispatchables": {
    "sub": {
      "type": "DML_OPERATOR_ELEMENT_WISE_SUBTRACT",
      "desc": {
        "ATensor": { "DataType": "FLOAT32", "Sizes": [6] },
        "BTensor": { "DataType": "FLOAT32", "Sizes": [6] },
        "OutputTensor": { "DataType": "FLOAT32", "Sizes": [6] }
      }
    }
  },
  "commands": [
    { "type": "dispatch", "dispatchable": "sub", "bindings": { "ATensor": "A", "BTensor": "B", "OutputTensor": "Out" } },
    { "type": "print", "resource": "Out" },
    { "type": "writeFile", "targetPath": "dml_element_wise_add_output.npy", "resource": "Out", "dimensions": [6] }
  ]
}"#,
    );
    let out = dir.run(&["run", "model.json"]);
    out.ok();
    assert_eq!(out.stdout_str(), "Resource 'Out': -9, -18, -27, -36, -45, -54\n");
    let n = parse_npy(&dir.read("dml_element_wise_add_output.npy"));
    assert_eq!((n.descr.as_str(), n.shape.clone()), ("<f4", vec![6]));
    assert_eq!(f32s(&n.data), [-9.0, -18.0, -27.0, -36.0, -45.0, -54.0]);
}

/// A model of one SUBTRACT (or `op`) dispatch over resources `res` (JSON object members) with
/// the three descs and `commands` after the dispatch.
fn one_dispatch(op: &str, res: &str, descs: [&str; 3], bind: [&str; 3], after: &str) -> String {
    format!(
        r#"{{
  // written by the tests
  "resources": {{ {res}, }},
  "dispatchables": {{ "d": {{ "type": "{op}", "desc": {{ "ATensor": {}, "BTensor": {}, "OutputTensor": {}, }} }} }},
  "commands": [
    {{ "type": "Dispatch", "dispatchable": "d", "bindings": {{ "ATensor": {}, "BTensor": {}, "OutputTensor": {} }} }},
    {after}
  ],
}}"#,
        descs[0], descs[1], descs[2], bind[0], bind[1], bind[2]
    )
}

#[test]
fn initializers_strides_offsets_and_in_place_follow_dxdispatch() {
    let dir = Dir::new();
    // A: 0..6 as a sequence; B: an array with the special strings; Out prefilled with 7s.
    // B is read transposed (strides [1, 2] over a 3x2 buffer); Out's desc covers every other
    // element (strides [6, 2]), so the elements in between keep their 7s.
    model(
        &dir,
        &one_dispatch(
            "ELEMENT_WISE_SUBTRACT",
            r#""A": { "initialValuesDataType": "FLOAT32", "initialValues": { "valueCount": 6, "valueStart": 0, "valueDelta": 1 } },
               "B": { "initialValuesDataType": "FLOAT32", "initialValues": [1, 2, "NaN", 4, "inf", "-Inf"] },
               "Out": { "initialValuesDataType": "FLOAT32", "initialValues": { "valueCount": 12, "value": 7 } }"#,
            [
                r#"{ "DataType": "FLOAT32", "Sizes": [2, 3] }"#,
                r#"{ "Type": "DML_TENSOR_TYPE_BUFFER", "Desc": { "DataType": "FLOAT32", "Sizes": [2, 3], "Strides": [1, 2] } }"#,
                r#"{ "DataType": "FLOAT32", "Sizes": [2, 3], "Strides": [6, 2] }"#,
            ],
            [r#""A""#, r#"["B"]"#, r#"{ "name": "Out" }"#],
            r#"{ "type": "print", "resource": "Out" }, { "type": "writeFile", "targetPath": "out.bin", "resource": "Out" }"#,
        ),
    );
    let out = dir.run(&["run", "model.json"]);
    out.ok();
    // B transposed: [[1, NaN, inf], [2, 4, -inf]].
    let want = [-1.0f32, 7.0, f32::NAN, 7.0, -f32::INFINITY, 7.0, 1.0, 7.0, 0.0, 7.0, f32::INFINITY, 7.0];
    let got = f32s(&dir.read("out.bin"));
    assert_eq!(got.len(), 12);
    for (g, w) in got.iter().zip(want) {
        assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{got:?}");
    }
    assert_eq!(out.stdout_str(), "Resource 'Out': -1, 7, nan, 7, -inf, 7, 1, 7, 0, 7, inf, 7\n");

    // In place with a binding offset: Out = A[2..] - B, written over A itself.
    model(
        &dir,
        &one_dispatch(
            "DML_OPERATOR_ELEMENT_WISE_SUBTRACT",
            r#""A": { "initialValuesDataType": "INT32", "initialValues": [10, 20, 30, 40, 50, 60, 70, 80] },
               "B": { "initialValuesDataType": "INT32", "initialValues": { "valueCount": 4, "value": 1 } }"#,
            [
                r#"{ "DataType": "INT32", "Sizes": [4] }"#,
                r#"{ "DataType": "INT32", "Sizes": [4] }"#,
                r#"{ "DataType": "INT32", "Sizes": [4] }"#,
            ],
            [r#"{ "name": "A", "elementOffset": 4 }"#, r#""B""#, r#""A""#],
            r#"{ "type": "writeFile", "targetPath": "a.npy", "resource": "A", "dimensions": [2, 4] }"#,
        ),
    );
    dir.run(&["run", "model.json"]).ok();
    let n = parse_npy(&dir.read("a.npy"));
    let got: Vec<i32> = n.data.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    assert_eq!(n.shape, [2, 4]);
    assert_eq!(got, [49, 59, 69, 79, 50, 60, 70, 80]);
}

#[test]
fn sequences_and_constants_are_made_in_the_element_type() {
    let dir = Dir::new();
    // float16: 0.3 truncates to 0x34CC; uint8 sequences wrap; padding is zero and printed only
    // up to the initial values.
    model(
        &dir,
        r#"{
  "resources": {
    "H": { "initialValuesDataType": "FLOAT16", "initialValues": { "valueCount": 3, "value": 0.3 } },
    "U": { "initialValuesDataType": "UINT8", "initialValues": { "valueCount": 5, "valueStart": 250, "valueDelta": 3 } },
    "Z": { "initialValuesDataType": "UINT8", "initialValues": [0, 0, 0, 0, 0], "sizeInBytes": 8 }
  },
  "dispatchables": { "d": { "type": "DML_OPERATOR_ELEMENT_WISE_SUBTRACT", "desc": {
    "ATensor": { "DataType": "UINT8", "Sizes": [5] }, "BTensor": { "DataType": "UINT8", "Sizes": [5] },
    "OutputTensor": { "DataType": "UINT8", "Sizes": [5] } } } },
  "commands": [
    { "type": "print", "resource": "H" },
    { "type": "print", "resource": "U" },
    { "type": "dispatch", "dispatchable": "d", "bindings": { "ATensor": "Z", "BTensor": "U", "OutputTensor": "Z" } },
    { "type": "print", "resource": "Z", "verbose": true },
    { "type": "writeFile", "targetPath": "h.npy", "resource": "H" },
    { "type": "writeFile", "targetPath": "z.npy", "resource": "Z" }
  ]
}"#,
    );
    let out = dir.run(&["run", "model.json"]);
    out.ok();
    assert_eq!(
        out.stdout_str(),
        "Resource 'H': 0.299805, 0.299805, 0.299805\n\
         Resource 'U': 250, 253, 0, 3, 6\n\
         Resource 'Z':\n[0] 6 (0x 6)\n[1] 3 (0x 3)\n[2] 0 (0x 0)\n[3] 253 (0xFD)\n[4] 250 (0xFA)\n\n"
    );
    // Default .npy shape: the whole buffer (rounded up to 4 bytes), 1-D.
    let h = parse_npy(&dir.read("h.npy"));
    assert_eq!(h.shape, [4]);
    assert_eq!(h.data, [0xCC, 0x34, 0xCC, 0x34, 0xCC, 0x34, 0, 0]);
    assert_eq!(parse_npy(&dir.read("z.npy")).shape, [8]);
}

#[test]
fn a_failed_check_stops_the_model_before_anything_is_written() {
    let dir = Dir::new();
    let m = |dtype: &str, sizes: &str| {
        one_dispatch(
            "DML_OPERATOR_ELEMENT_WISE_SUBTRACT",
            &format!(
                r#""A": {{ "initialValuesDataType": "{dtype}", "initialValues": {{ "valueCount": 6, "value": 1 }} }},
                   "Out": {{ "initialValuesDataType": "{dtype}", "initialValues": {{ "valueCount": 6, "value": 0 }} }}"#
            ),
            [&format!(r#"{{ "DataType": "{dtype}", "Sizes": {sizes} }}"#); 3].map(|s| s.as_str()),
            [r#""A""#, r#""A""#, r#""Out""#],
            r#"{ "type": "print", "resource": "Out" }, { "type": "writeFile", "targetPath": "o.npy", "resource": "Out" }"#,
        )
    };
    model(&dir, &m("FLOAT64", "[6]"));
    let out = dir.run(&["run", "model.json", "--report", "rep.json"]);
    out.expect_code(3).stderr_mentions("datatype_supported");
    assert!(out.stdout.is_empty() && !dir.exists("o.npy"), "nothing printed or written");
    let rep = dir.report("rep.json");
    assert_eq!(rep["status"], "invalid");
    assert_eq!(rep["dispatches"][0]["dispatchable"], "d");
    assert_eq!(check_status(&rep["dispatches"][0], "datatype_supported"), "fail");
    // The same model passes where float64 has no DirectML limit.
    dir.run(&["run", "model.json", "-f", "none"]).ok();
    assert!(dir.exists("o.npy"));
    // Rank 1 is not rank 4: levels before 3_0 refuse the desc; the report names the oldest level.
    model(&dir, &m("FLOAT32", "[6]"));
    dir.run(&["run", "model.json", "-f", "1_0", "--report", "rep.json"]).expect_code(3).stderr_mentions("3_0");
    assert_eq!(dir.report("rep.json")["dispatches"][0]["minimum_feature_level"], "3_0");
    model(&dir, &m("FLOAT32", "[1, 1, 2, 3]"));
    dir.run(&["run", "model.json", "-f", "1_0", "--dry-run", "--report", "rep.json"]).ok();
    assert_eq!(dir.report("rep.json")["valid"], true);
    // A desc that addresses more than its bound resource holds.
    model(&dir, &m("FLOAT32", "[7]"));
    dir.run(&["run", "model.json"]).expect_code(3).stderr_mentions("binding_size");
}

#[test]
fn unsupported_parts_are_refused_by_name_before_anything_is_written() {
    let dir = Dir::new();
    let base = |op: &str| {
        one_dispatch(
            op,
            r#""A": { "initialValuesDataType": "FLOAT32", "initialValues": [1, 2] }"#,
            [r#"{ "DataType": "FLOAT32", "Sizes": [2] }"#; 3],
            [r#""A""#, r#""A""#, r#""A""#],
            r#"{ "type": "writeFile", "targetPath": "o.npy", "resource": "A" }"#,
        )
    };
    for (op, name) in [("DML_OPERATOR_ELEMENT_WISE_ADD", "ELEMENT_WISE_ADD"), ("hlsl", "hlsl"), ("onnx", "onnx")] {
        model(&dir, &base(op));
        dir.run(&["run", "model.json"]).expect_code(1).stderr_mentions(name);
        assert!(!dir.exists("o.npy"));
    }
    let cases = [
        (base("SUBTRACT"), "dispatchables.d.type"),
        (
            base("ELEMENT_WISE_SUBTRACT").replace(r#""Sizes": [2] }"#, r#""Sizes": [2, -1] }"#),
            "dispatchables.d.desc.ATensor.Sizes[1]",
        ),
        (base("ELEMENT_WISE_SUBTRACT").replace(r#"[1, 2]"#, r#"[1, "x"]"#), "resources.A.initialValues[1]"),
        (base("ELEMENT_WISE_SUBTRACT").replace(r#""type": "Dispatch""#, r#""type": "copy""#), "commands[0].type"),
        (base("ELEMENT_WISE_SUBTRACT").replace(r#""OutputTensor": "A""#, r#""OutputTensor": "Nope""#), "Nope"),
        (
            base("ELEMENT_WISE_SUBTRACT").replace(r#""FLOAT32", "initialValues""#, r#""FLOAT8", "initialValues""#),
            "FLOAT8",
        ),
        ("{ \"resources\": {}, \"commands\": [] }".to_string(), "dispatchables"),
        ("{ \"resources\": { \"A\": { ".to_string(), "line"),
        ("[1, 2]".to_string(), "expected an object"),
        (
            base("ELEMENT_WISE_SUBTRACT").replace(
                r#"{ "initialValuesDataType": "FLOAT32", "initialValues": [1, 2] }"#,
                r#"{ "type": "texture2d", "initialValues": [1] }"#,
            ),
            "texture2d",
        ),
    ];
    for (text, needle) in cases {
        model(&dir, &text);
        dir.run(&["run", "model.json"]).expect_code(1).stderr_mentions(needle);
        assert!(!dir.exists("o.npy"));
    }
}

#[test]
fn hostile_models_are_refused_without_allocating_what_they_ask_for() {
    let dir = Dir::new();
    let huge = one_dispatch(
        "ELEMENT_WISE_SUBTRACT",
        r#""A": { "initialValuesDataType": "FLOAT64", "initialValues": { "valueCount": 4294967295, "value": 1 } }"#,
        [r#"{ "DataType": "FLOAT64", "Sizes": [2] }"#; 3],
        [r#""A""#, r#""A""#, r#""A""#],
        r#"{ "type": "print", "resource": "A" }"#,
    );
    model(&dir, &huge);
    let out = dir.run(&["run", "model.json", "-f", "none"]);
    out.expect_code(1).stderr_mentions("--resource-limit");
    assert!(out.stdout.is_empty());
    let sized = huge
        .replace(r#""valueCount": 4294967295"#, r#""valueCount": 2"#)
        .replace(r#""value": 1 } }"#, r#""value": 1 }, "sizeInBytes": 18446744073709551615 }"#);
    model(&dir, &sized);
    dir.run(&["run", "model.json", "-f", "none"]).expect_code(1).stderr_mentions("--resource-limit");
    // Sizes whose product passes 2^64, and strides far outside the buffer.
    let big = huge.replace(r#""valueCount": 4294967295"#, r#""valueCount": 2"#).replace(
        r#""Sizes": [2] }"#,
        r#""Sizes": [4294967295, 4294967295, 4294967295], "Strides": [4294967295, 4294967295, 1] }"#,
    );
    model(&dir, &big);
    dir.run(&["run", "model.json", "-f", "none"]).expect_code(3).stderr_mentions("binding_size");
    // Deep nesting and a model that is not text.
    dir.write("model.json", "[".repeat(1 << 16).as_bytes());
    dir.run(&["run", "model.json"]).expect_code(1).expect_message();
    dir.write("model.json", &[0xff, 0xfe, 0x00]);
    dir.run(&["run", "model.json"]).expect_code(1).expect_message();
    #[cfg(unix)]
    {
        // A source path that loops.
        std::os::unix::fs::symlink("loop2.npy", dir.path("loop1.npy")).unwrap();
        std::os::unix::fs::symlink("loop1.npy", dir.path("loop2.npy")).unwrap();
        model(&dir, &huge.replace(r#"{ "valueCount": 4294967295, "value": 1 }"#, r#"{ "sourcePath": "loop1.npy" }"#));
        dir.run(&["run", "model.json"]).expect_code(1).stderr_mentions("loop1.npy");
    }
}

#[test]
fn compare_says_identical_or_how_far_apart() {
    let dir = Dir::new();
    float32_pair(&dir);
    let same = dir.run(&["compare", "a.npy", "a.npy"]);
    same.ok();
    assert!(same.stdout_str().contains("bit-identical"));
    let out = dir.run(&["compare", "b.npy", "a.npy"]);
    out.expect_code(4);
    let text = out.stdout_str();
    for part in [
        "2 of 4 elements differ",
        "largest absolute difference: 0.5 at [1, 1]",
        "3 ulp",
        "[0, 1]: 2.0000007 vs 2 (3 ulp)",
    ] {
        assert!(text.contains(part), "{part:?} missing from:\n{text}");
    }
    let json = dir.run(&["compare", "b.npy", "a.npy", "--json"]);
    json.expect_code(4);
    let v = json.stdout_json();
    assert_eq!(v["differing"], 2);
    assert_eq!(v["max_ulps"], 1048576);
    assert_eq!(v["first_differences"][0]["index"], serde_json::json!([0, 1]));
    dir.write("i.npy", &npy(&[4], &[1i32, 2, 3, 4]));
    dir.run(&["compare", "i.npy", "a.npy"]).expect_code(1).stderr_mentions("dtype");
}

#[test]
fn run_on_the_gpu_matches_the_cpu_bit_for_bit() {
    if !gpu_available("dxdispatch::run_on_the_gpu_matches_the_cpu_bit_for_bit") {
        return;
    }
    let dir = Dir::new();
    for (op, dtype, sa, sb) in [
        ("sqdiff", "float16", vec![3usize, 4, 5], vec![4, 1]),
        ("sub", "int64", vec![2, 3], vec![3]),
        ("sqdiff", "float32", vec![7, 1, 3], vec![2, 3]),
    ] {
        let _ = std::fs::remove_dir_all(dir.path("r"));
        dir.write("a.npy", &npy_of(dtype, &sa, &values(sa.iter().product(), 3), false));
        dir.write("b.npy", &npy_of(dtype, &sb, &values(sb.iter().product(), 4), true));
        dir.run(&[op, "a.npy", "b.npy", "--dxdispatch", "r"]).ok();
        run_in(&dir.path("r"), &["run", "model.json", "--backend", "wgpu"], Input::Null).ok();
        run_in(&dir.path("r"), &["compare", "output.npy", "expected.npy"], Input::Null).ok();
    }
}

#[test]
fn source_files_are_read_in_place_but_never_changed() {
    let dir = Dir::new();
    dir.write("a.npy", &npy(&[4], &[1.0f32, 2.0, 3.0, 4.0]));
    let b = npy(&[4], &[1.0f32, 1.0, 1.0, 1.0]);
    dir.write("b.npy", &b);
    // In place over a .npy-backed resource, whose file a writeFile then replaces, and again.
    model(
        &dir,
        &one_dispatch(
            "ELEMENT_WISE_SUBTRACT",
            r#""A": { "initialValues": { "sourcePath": "a.npy" } }, "B": { "initialValues": { "sourcePath": "b.npy" } }"#,
            [r#"{ "DataType": "FLOAT32", "Sizes": [4] }"#; 3],
            [r#""A""#, r#""B""#, r#""A""#],
            r#"{ "type": "writeFile", "targetPath": "a.npy", "resource": "A", "dimensions": [4] },
               { "type": "dispatch", "dispatchable": "d", "bindings": { "ATensor": "A", "BTensor": "B", "OutputTensor": "A" } },
               { "type": "writeFile", "targetPath": "a2.npy", "resource": "A", "dimensions": [4] }"#,
        ),
    );
    dir.run(&["run", "model.json"]).ok();
    assert_eq!(f32s(&parse_npy(&dir.read("a.npy")).data), [0.0, 1.0, 2.0, 3.0]);
    assert_eq!(f32s(&parse_npy(&dir.read("a2.npy")).data), [-1.0, 0.0, 1.0, 2.0]);
    assert_eq!(dir.read("b.npy"), b, "an input's file is never written");
}

#[test]
fn temporary_results_count_against_the_limit_and_outputs_need_their_own_elements() {
    let dir = Dir::new();
    let m = |out_strides: &str| {
        one_dispatch(
            "ELEMENT_WISE_SUBTRACT",
            r#""A": { "initialValuesDataType": "FLOAT32", "initialValues": { "valueCount": 100, "value": 3 } },
               "B": { "initialValuesDataType": "FLOAT32", "initialValues": { "valueCount": 100, "value": 1 } },
               "Out": { "initialValuesDataType": "FLOAT32", "initialValues": { "valueCount": 200, "value": 0 } }"#,
            [
                r#"{ "DataType": "FLOAT32", "Sizes": [100] }"#,
                r#"{ "DataType": "FLOAT32", "Sizes": [100] }"#,
                &format!(r#"{{ "DataType": "FLOAT32", "Sizes": [100], "Strides": {out_strides} }}"#),
            ],
            [r#""A""#, r#""B""#, r#""Out""#],
            r#"{ "type": "writeFile", "targetPath": "o.bin", "resource": "Out" }"#,
        )
    };
    // Resources: 400 + 400 + 800 bytes; a strided output's result also takes 400 while it runs.
    model(&dir, &m("[2]"));
    dir.run(&["run", "model.json", "--resource-limit", "1700"]).expect_code(1).stderr_mentions("dispatch 'd'");
    assert!(!dir.exists("o.bin"));
    dir.run(&["run", "model.json", "--resource-limit", "2000"]).ok();
    let got = f32s(&dir.read("o.bin"));
    assert!(got.iter().step_by(2).all(|&x| x == 2.0) && got.iter().skip(1).step_by(2).all(|&x| x == 0.0));
    // An output desc that writes one element many times is refused.
    model(&dir, &m("[0]"));
    dir.run(&["run", "model.json"]).expect_code(3).stderr_mentions("output_desc");
    // A binding offset that splits an element.
    model(
        &dir,
        &m("[2]")
            .replace(r#""ATensor": "A""#, r#""ATensor": { "name": "A", "elementOffset": 2, "elementSizeInBytes": 1 }"#),
    );
    dir.run(&["run", "model.json"]).expect_code(3).stderr_mentions("element size");
}

#[test]
fn run_reads_its_wgpu_settings_as_sub_does_before_any_work() {
    let dir = Dir::new();
    model(&dir, &subtract_model("[1, 2, 3, 4]", "[4, 3, 2, 1]", "out.npy"));
    let bad = [("TENSOROP_WGPU_CHUNK_BYTES", "lots")];
    for extra in [&[][..], &["--dry-run"]] {
        let args = [&["run", "model.json", "--backend", "wgpu", "--report", "rep.json"][..], extra].concat();
        dir.run_env(&args, &bad).expect_code(2).stderr_mentions("TENSOROP_WGPU_CHUNK_BYTES=lots");
        assert!(!dir.exists("rep.json") && !dir.exists("out.npy"), "a usage error does no work");
        dir.run_env(&["sub", "a.npy", "b.npy", "-o", "o.npy", "--backend", "wgpu"], &bad)
            .expect_code(2)
            .stderr_mentions("TENSOROP_WGPU_CHUNK_BYTES=lots");
    }
    // The cpu backend reads no wgpu setting.
    dir.run_env(&["run", "model.json", "--dry-run"], &bad).ok();
}
