//! The wording of every verdict: the `Display` impls that turn what a check established into
//! the message a user reads. Each names the input, the rule and, for a failure, the fix.

use super::verdict::{
    BindingSizes, Datatype, DtypeFix, Elements, NoRow, Operator, OutputDesc, Rank, RankFix, RankRange, SameDatatype,
    Shapes, Sizes, TensorDescs, Verdict,
};
use super::MAX_ELEMENTS;
use crate::dtype::DType;
use crate::op::Op;
use crate::shape::{fmt_shape, Incompatible};
use crate::spec::dml::dml_name;
use crate::spec::level::LevelChoice;
use crate::spec::matrix::SupportRow;
use std::fmt;

impl fmt::Display for Verdict<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Operator(v) => v.fmt(f),
            Verdict::Datatype(v) => v.fmt(f),
            Verdict::SameDatatype(v) => v.fmt(f),
            Verdict::Shapes(v) => v.fmt(f),
            Verdict::Rank(v) => v.fmt(f),
            Verdict::Sizes(v) => v.fmt(f),
            Verdict::Elements(v) => v.fmt(f),
            Verdict::OutputDesc(v) => v.fmt(f),
            Verdict::TensorDescs(v) => v.fmt(f),
            Verdict::BindingSizes(v) => v.fmt(f),
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let named = |op: &Op| format!("{} ({})", op.name(), op.dml_operator());
        match self {
            Operator::Unrequired => f.write_str("--feature-level none: no DirectML operator requirement"),
            Operator::Available { op, level, since } => {
                write!(f, "{} is available at feature level {level} (since {since})", named(op))
            }
            Operator::Missing { op, level, since } => write!(
                f,
                "{} needs feature level {since} or newer; you asked for {level}. Use --feature-level {since} or \
                 newer, or --feature-level none",
                named(op)
            ),
        }
    }
}

impl fmt::Display for Datatype<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |row: &SupportRow| row.dtypes.iter().map(|d| d.name()).collect::<Vec<_>>().join(" ");
        match self {
            Datatype::NotNumeric { input, dtype } => write!(
                f,
                "{input} has dtype {dtype}, which tensorop does not compute on; convert it to one of the numeric \
                 dtypes (float16/32/64, int8-64, uint8-64)"
            ),
            Datatype::AnyNumeric { input, dtype } => {
                write!(f, "{input} is {dtype}; --feature-level none accepts every numeric dtype")
            }
            Datatype::NoRow(no_row) => no_row.fmt(f),
            Datatype::Accepted { input, dtype, level, row } => {
                let (op, since, list) = (row.op.name(), row.since, names(row));
                write!(f, "{input} is {dtype}; {op} at feature level {level} (support row {since}) accepts {list}")
            }
            Datatype::Refused { input, dtype, level, row, fix } => {
                let (op, since, list) = (row.op.name(), row.since, names(row));
                write!(
                    f,
                    "{input} is {dtype}, which {op} at feature level {level} (support row {since}) does not \
                     support; it accepts {list}. {fix}"
                )
            }
        }
    }
}

impl fmt::Display for NoRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "skipped: {} has no support row at feature level {}", self.op.name(), self.level)
    }
}

impl fmt::Display for DtypeFix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DtypeFix::Level(l) => write!(f, "Use --feature-level {l} or newer, or convert the inputs"),
            DtypeFix::Never { dtype: DType::BF16, .. } => write!(
                f,
                "DirectML has no bfloat16 tensor type at any feature level: use --feature-level none, or convert \
                 the inputs to float32 or float16"
            ),
            DtypeFix::Never { op, dtype } => write!(
                f,
                "DirectML's {} never supports {dtype}: convert the inputs, or use --feature-level none",
                op.name()
            ),
        }
    }
}

impl fmt::Display for SameDatatype<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SameDatatype::Same { dtype } => write!(f, "A and B are both {}", dtype.name()),
            SameDatatype::Differ { op, a, b } => {
                let (an, ad, bn, bd, op) = (&a.name, a.dtype.name(), &b.name, b.dtype.name(), op.name());
                write!(
                    f,
                    "{an} is {ad} but {bn} is {bd}; {op} does not promote types: convert one input so both have \
                     the same dtype (e.g. numpy's b.astype('{ad}'))"
                )
            }
        }
    }
}

impl fmt::Display for Shapes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = fmt_shape;
        match self {
            Shapes::Broadcast { a, b, out } => write!(f, "shapes {} and {} broadcast to {}", s(a), s(b), s(out)),
            Shapes::NoBroadcast { a, b, clash: Incompatible { from_end, a: size_a, b: size_b } } => {
                let (a, b) = (s(a), s(b));
                write!(
                    f,
                    "shapes {a} and {b} do not broadcast: dimension {from_end} from the end is {size_a} in A and \
                     {size_b} in B; sizes must be equal or one of them 1 (reshape an input, e.g. add an axis)"
                )
            }
            Shapes::Same { shape } => write!(f, "both shapes are {}", s(shape)),
            Shapes::Differ { a, b } => {
                let (a, b) = (s(a), s(b));
                write!(
                    f,
                    "--broadcast none needs identical shapes; A is {a} and B is {b}. Use --broadcast numpy to \
                     broadcast"
                )
            }
        }
    }
}

impl fmt::Display for Rank<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rank::NoRow(no_row) => no_row.fmt(f),
            Rank::Fits { rank: 0, allowed } if allowed.level != LevelChoice::None => {
                write!(f, "the output has rank 0 (rank 0 counts as rank 1); {allowed}")
            }
            Rank::Fits { rank, allowed } => write!(f, "the output has rank {rank}; {allowed}"),
            Rank::Padded { rank, allowed, out } => {
                let to = allowed.ranks.0;
                let padded = out.map(|out| [vec![1; to - to.min(*rank)], out.to_vec()].concat());
                let shown = padded.map_or(String::new(), |p| format!(" ({})", fmt_shape(&p)));
                write!(f, "the output has rank {rank}; padded with leading 1s to rank {to}{shown}, as {allowed}")
            }
            Rank::TooHigh { rank, allowed, fix } => write!(f, "the output has rank {rank}, but {allowed}; {fix}"),
            Rank::Unpadded { desc, rank, level, row } => write!(
                f,
                "{desc} has {rank} dimensions; {} at feature level {level} takes {} (support row {}): write Sizes \
                 with leading 1s, as tensorop's own export does",
                row.op.dml_operator(),
                row.ranks.0,
                row.since
            ),
        }
    }
}

/// `sub at feature level 2_1 supports exactly 4 dimensions`.
impl fmt::Display for RankRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.level {
            LevelChoice::None => f.write_str("--feature-level none")?,
            LevelChoice::Dml(l) => write!(f, "{} at feature level {l}", self.op.name())?,
        }
        match self.ranks {
            (lo, hi) if lo == hi => write!(f, " supports exactly {lo} dimensions"),
            (lo, hi) => write!(f, " supports {lo} to {hi} dimensions"),
        }
    }
}

impl fmt::Display for RankFix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RankFix::Level { since, ranks: (lo, hi) } => {
                write!(f, "use --feature-level {since} or newer (ranks {lo}-{hi}), or --feature-level none")
            }
            RankFix::LevelNone { ranks: (lo, hi) } => {
                write!(f, "use --feature-level none (ranks {lo}-{hi}), or reshape the inputs")
            }
            RankFix::Reshape { max } => write!(
                f,
                "reshape the inputs to at most {max} dimensions: no feature level accepts more, --feature-level \
                 none included"
            ),
        }
    }
}

impl fmt::Display for Sizes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Sizes::Unchecked => f.write_str("--feature-level none: empty tensors are allowed"),
            Sizes::Nonzero => f.write_str("no dimension is 0"),
            Sizes::Zero { input } => {
                let (name, shape) = (&input.name, fmt_shape(input.shape));
                write!(
                    f,
                    "{name} has shape {shape} with a dimension of size 0; DirectML rejects empty tensors. Use \
                     --feature-level none to allow them"
                )
            }
        }
    }
}

impl fmt::Display for Elements<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Elements::Unlimited => f.write_str("--feature-level none: no DirectML element limit"),
            Elements::NoShape => f.write_str("skipped: the shapes have no common output shape"),
            Elements::Within { count } => {
                write!(f, "the output has {} (limit {MAX_ELEMENTS})", crate::text::plural(*count, "element"))
            }
            Elements::Over { out, count } => {
                let (out, count) = (fmt_shape(out), count.map_or("over 2^64".into(), |n| n.to_string()));
                write!(
                    f,
                    "the output {out} has {count} elements, more than DirectML's limit of {MAX_ELEMENTS} \
                     (2^32 - 1); split the work or use --feature-level none"
                )
            }
        }
    }
}

impl fmt::Display for OutputDesc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutputDesc::Matches { dtype, sizes } => {
                write!(f, "OutputTensor is {} {sizes:?}, as ATensor", dml_name(*dtype))
            }
            OutputDesc::OtherDtype { out, a } => write!(
                f,
                "OutputTensor is {} but ATensor is {}; DirectML computes in one data type",
                dml_name(*out),
                dml_name(*a)
            ),
            OutputDesc::ZeroStride { dimension, size } => write!(
                f,
                "OutputTensor's Strides are 0 along dimension {dimension} (of size {size}): every element there \
                 would be written to one place; give the output its own element for each"
            ),
            OutputDesc::OtherSizes { out, a } => {
                write!(f, "OutputTensor's Sizes {out:?} differ from ATensor's {a:?}; DirectML requires the same sizes")
            }
        }
    }
}

impl fmt::Display for TensorDescs<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TensorDescs::Consistent => f.write_str("the three descs are consistent"),
            TensorDescs::NoSizes { desc } => {
                write!(f, "{desc}: Sizes is empty; a DirectML tensor has at least one dimension (write [1])")
            }
            TensorDescs::Oversized { desc, sizes } => {
                write!(f, "{desc}: Sizes {sizes:?} describe more than 2^64 bytes")
            }
            TensorDescs::DimensionCount { desc, count, sizes } => {
                write!(f, "{desc}: DimensionCount is {count} but Sizes has {sizes} entries")
            }
            TensorDescs::Strides { desc, strides, sizes } => {
                write!(f, "{desc}: Strides has {strides} entries but Sizes has {sizes}")
            }
            TensorDescs::TotalSize { desc, total, addressed } => write!(
                f,
                "{desc}: TotalTensorSizeInBytes is {total} but the desc addresses {addressed} bytes \
                 (DMLCalcBufferTensorSize)"
            ),
        }
    }
}

impl fmt::Display for BindingSizes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindingSizes::Hold => f.write_str("every bound resource holds its tensor"),
            BindingSizes::Misaligned { desc, dtype, resource, offset } => write!(
                f,
                "{desc} is bound to '{resource}' at byte {offset}, which is not a multiple of its element size \
                 ({} bytes); give elementOffset in elements of {}",
                dtype.size(),
                dml_name(*dtype)
            ),
            BindingSizes::TooSmall { desc, total, resource, room, offset } => write!(
                f,
                "{desc} needs {total} bytes (TotalTensorSizeInBytes) but '{resource}' has {room} bytes from offset \
                 {offset}; enlarge its sizeInBytes or bind a larger resource"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use crate::shape::Incompatible;

    /// Every message, once: a verdict of each kind and the exact text a user reads.
    #[test]
    fn every_verdict_renders_its_message() {
        let (f32_, i32_) = (FileDType::Numeric(DType::F32), FileDType::Numeric(DType::I32));
        let a = TensorSpec { name: "A (a.npy)".into(), dtype: &f32_, shape: &[2, 3] };
        let b = TensorSpec { name: "B (b.npy)".into(), dtype: &i32_, shape: &[0, 3] };
        let tables =
            [level_messages(), input_messages(&a, &b), rank_messages(), size_messages(&b), dispatch_messages()];
        for (verdict, text) in tables.into_iter().flatten() {
            assert_eq!(verdict.to_string(), text, "{verdict:?}");
        }
    }

    /// `operator_available` and `datatype_supported`, the checks of the level's support row.
    fn level_messages() -> Vec<(Verdict<'static>, &'static str)> {
        use DType::*;
        let (sub, sqdiff, input) = (Op::Sub, Op::SqDiff, "A (a.npy)");
        let no_row = NoRow { op: sqdiff, level: fl("3_0") };
        vec![
            (Verdict::Operator(Operator::Unrequired), "--feature-level none: no DirectML operator requirement"),
            (
                Verdict::Operator(Operator::Available { op: sub, level: fl("2_1"), since: fl("1_0") }),
                "sub (DML_OPERATOR_ELEMENT_WISE_SUBTRACT) is available at feature level 2_1 (since 1_0)",
            ),
            (
                Verdict::Operator(Operator::Missing { op: sqdiff, level: fl("3_0"), since: fl("3_1") }),
                "sqdiff (DML_OPERATOR_ELEMENT_WISE_DIFFERENCE_SQUARE) needs feature level 3_1 or newer; you \
                 asked for 3_0. Use --feature-level 3_1 or newer, or --feature-level none",
            ),
            (
                Verdict::Datatype(Datatype::NotNumeric { input, dtype: "complex64" }),
                "A (a.npy) has dtype complex64, which tensorop does not compute on; convert it to one of the \
                 numeric dtypes (float16/32/64, int8-64, uint8-64)",
            ),
            (
                Verdict::Datatype(Datatype::AnyNumeric { input, dtype: F64 }),
                "A (a.npy) is float64; --feature-level none accepts every numeric dtype",
            ),
            (Verdict::Datatype(Datatype::NoRow(no_row)), "skipped: sqdiff has no support row at feature level 3_0"),
            (
                Verdict::Datatype(Datatype::Accepted { input, dtype: F32, level: fl("3_1"), row: row(sub, "3_1") }),
                "A (a.npy) is float32; sub at feature level 3_1 (support row 3_0) accepts float32 float16 int32 \
                 uint32",
            ),
            (
                Verdict::Datatype(Datatype::Refused {
                    input,
                    dtype: I8,
                    level: fl("4_1"),
                    row: row(sub, "4_1"),
                    fix: DtypeFix::Level(fl("5_1")),
                }),
                "A (a.npy) is int8, which sub at feature level 4_1 (support row 4_1) does not support; it accepts \
                 float32 float16 int64 int32 uint64 uint32. Use --feature-level 5_1 or newer, or convert the inputs",
            ),
            (
                Verdict::Datatype(Datatype::Refused {
                    input,
                    dtype: F64,
                    level: fl("6_4"),
                    row: row(sqdiff, "6_4"),
                    fix: DtypeFix::Never { op: sqdiff, dtype: F64 },
                }),
                "A (a.npy) is float64, which sqdiff at feature level 6_4 (support row 3_1) does not support; it \
                 accepts float32 float16 int32 uint32. DirectML's sqdiff never supports float64: convert the \
                 inputs, or use --feature-level none",
            ),
        ]
    }

    /// `same_datatype`, `broadcastable` and `same_sizes`, the checks of the inputs alone.
    fn input_messages<'v>(a: &'v TensorSpec<'v>, b: &'v TensorSpec<'v>) -> Vec<(Verdict<'v>, &'static str)> {
        let sub = Op::Sub;
        vec![
            (Verdict::SameDatatype(SameDatatype::Same { dtype: a.dtype }), "A and B are both float32"),
            (
                Verdict::SameDatatype(SameDatatype::Differ { op: sub, a, b }),
                "A (a.npy) is float32 but B (b.npy) is int32; sub does not promote types: convert one input so \
                 both have the same dtype (e.g. numpy's b.astype('float32'))",
            ),
            (
                Verdict::Shapes(Shapes::Broadcast { a: &[2, 3], b: &[3], out: vec![2, 3] }),
                "shapes [2, 3] and [3] broadcast to [2, 3]",
            ),
            (
                Verdict::Shapes(Shapes::NoBroadcast {
                    a: &[2, 3],
                    b: &[4],
                    clash: Incompatible { from_end: 1, a: 3, b: 4 },
                }),
                "shapes [2, 3] and [4] do not broadcast: dimension 1 from the end is 3 in A and 4 in B; sizes \
                 must be equal or one of them 1 (reshape an input, e.g. add an axis)",
            ),
            (Verdict::Shapes(Shapes::Same { shape: &[] }), "both shapes are []"),
            (
                Verdict::Shapes(Shapes::Differ { a: &[2, 3], b: &[3] }),
                "--broadcast none needs identical shapes; A is [2, 3] and B is [3]. Use --broadcast numpy to \
                 broadcast",
            ),
        ]
    }

    /// `dimension_count`.
    fn rank_messages() -> Vec<(Verdict<'static>, &'static str)> {
        let sub = Op::Sub;
        let (sub_2_1, sub_6_4, none) =
            (range(sub, "2_1", (4, 4)), range(sub, "6_4", (1, 8)), range(sub, "none", (0, 32)));
        let no_row = NoRow { op: Op::SqDiff, level: fl("3_0") };
        vec![
            (Verdict::Rank(Rank::NoRow(no_row)), "skipped: sqdiff has no support row at feature level 3_0"),
            (
                Verdict::Rank(Rank::Fits { rank: 4, allowed: sub_2_1 }),
                "the output has rank 4; sub at feature level 2_1 supports exactly 4 dimensions",
            ),
            (
                Verdict::Rank(Rank::Fits { rank: 1, allowed: sub_6_4 }),
                "the output has rank 1; sub at feature level 6_4 supports 1 to 8 dimensions",
            ),
            (
                Verdict::Rank(Rank::Fits { rank: 0, allowed: sub_6_4 }),
                "the output has rank 0 (rank 0 counts as rank 1); sub at feature level 6_4 supports 1 to 8 \
                 dimensions",
            ),
            (
                Verdict::Rank(Rank::Fits { rank: 0, allowed: none }),
                "the output has rank 0; --feature-level none supports 0 to 32 dimensions",
            ),
            (
                Verdict::Rank(Rank::Padded { rank: 2, allowed: sub_2_1, out: Some(&[2, 3]) }),
                "the output has rank 2; padded with leading 1s to rank 4 ([1, 1, 2, 3]), as sub at feature level \
                 2_1 supports exactly 4 dimensions",
            ),
            (
                Verdict::Rank(Rank::Padded { rank: 0, allowed: range(sub, "1_0", (4, 4)), out: Some(&[]) }),
                "the output has rank 0; padded with leading 1s to rank 4 ([1, 1, 1, 1]), as sub at feature level \
                 1_0 supports exactly 4 dimensions",
            ),
            (
                Verdict::Rank(Rank::Padded { rank: 2, allowed: sub_2_1, out: None }),
                "the output has rank 2; padded with leading 1s to rank 4, as sub at feature level 2_1 supports \
                 exactly 4 dimensions",
            ),
            (
                Verdict::Rank(Rank::TooHigh {
                    rank: 5,
                    allowed: sub_2_1,
                    fix: RankFix::Level { since: fl("3_0"), ranks: (1, 8) },
                }),
                "the output has rank 5, but sub at feature level 2_1 supports exactly 4 dimensions; use \
                 --feature-level 3_0 or newer (ranks 1-8), or --feature-level none",
            ),
            (
                Verdict::Rank(Rank::TooHigh { rank: 9, allowed: sub_6_4, fix: RankFix::LevelNone { ranks: (0, 32) } }),
                "the output has rank 9, but sub at feature level 6_4 supports 1 to 8 dimensions; use \
                 --feature-level none (ranks 0-32), or reshape the inputs",
            ),
            (
                Verdict::Rank(Rank::TooHigh { rank: 33, allowed: none, fix: RankFix::Reshape { max: 32 } }),
                "the output has rank 33, but --feature-level none supports 0 to 32 dimensions; reshape the inputs \
                 to at most 32 dimensions: no feature level accepts more, --feature-level none included",
            ),
        ]
    }

    /// The checks of a DxDispatch dispatch alone (`tensorop run`): `dimension_count` of a desc
    /// as written, `output_desc`, `tensor_desc` and `binding_size`.
    fn dispatch_messages() -> Vec<(Verdict<'static>, &'static str)> {
        use DType::*;
        let (a, out) = ("ATensor", "OutputTensor");
        vec![
            (
                Verdict::Rank(Rank::Unpadded { desc: a, rank: 2, level: fl("2_0"), row: row(Op::Sub, "2_0") }),
                "ATensor has 2 dimensions; DML_OPERATOR_ELEMENT_WISE_SUBTRACT at feature level 2_0 takes 4 (support \
                 row 1_0): write Sizes with leading 1s, as tensorop's own export does",
            ),
            (
                Verdict::OutputDesc(OutputDesc::Matches { dtype: F32, sizes: &[2, 3] }),
                "OutputTensor is FLOAT32 [2, 3], as ATensor",
            ),
            (
                Verdict::OutputDesc(OutputDesc::OtherDtype { out: F16, a: F32 }),
                "OutputTensor is FLOAT16 but ATensor is FLOAT32; DirectML computes in one data type",
            ),
            (
                Verdict::OutputDesc(OutputDesc::ZeroStride { dimension: 1, size: 3 }),
                "OutputTensor's Strides are 0 along dimension 1 (of size 3): every element there would be written \
                 to one place; give the output its own element for each",
            ),
            (
                Verdict::OutputDesc(OutputDesc::OtherSizes { out: &[3, 2], a: &[2, 3] }),
                "OutputTensor's Sizes [3, 2] differ from ATensor's [2, 3]; DirectML requires the same sizes",
            ),
            (Verdict::TensorDescs(TensorDescs::Consistent), "the three descs are consistent"),
            (
                Verdict::TensorDescs(TensorDescs::NoSizes { desc: "BTensor" }),
                "BTensor: Sizes is empty; a DirectML tensor has at least one dimension (write [1])",
            ),
            (
                Verdict::TensorDescs(TensorDescs::Oversized { desc: a, sizes: &[u32::MAX, u32::MAX, 2] }),
                "ATensor: Sizes [4294967295, 4294967295, 2] describe more than 2^64 bytes",
            ),
            (
                Verdict::TensorDescs(TensorDescs::DimensionCount { desc: a, count: 3, sizes: 2 }),
                "ATensor: DimensionCount is 3 but Sizes has 2 entries",
            ),
            (
                Verdict::TensorDescs(TensorDescs::Strides { desc: out, strides: 1, sizes: 2 }),
                "OutputTensor: Strides has 1 entries but Sizes has 2",
            ),
            (
                Verdict::TensorDescs(TensorDescs::TotalSize { desc: a, total: 16, addressed: 24 }),
                "ATensor: TotalTensorSizeInBytes is 16 but the desc addresses 24 bytes (DMLCalcBufferTensorSize)",
            ),
            (Verdict::BindingSizes(BindingSizes::Hold), "every bound resource holds its tensor"),
            (
                Verdict::BindingSizes(BindingSizes::Misaligned {
                    desc: "BTensor",
                    dtype: F32,
                    resource: "B",
                    offset: 6,
                }),
                "BTensor is bound to 'B' at byte 6, which is not a multiple of its element size (4 bytes); give \
                 elementOffset in elements of FLOAT32",
            ),
            (
                Verdict::BindingSizes(BindingSizes::TooSmall {
                    desc: out,
                    total: 24,
                    resource: "Out",
                    room: 16,
                    offset: 8,
                }),
                "OutputTensor needs 24 bytes (TotalTensorSizeInBytes) but 'Out' has 16 bytes from offset 8; enlarge \
                 its sizeInBytes or bind a larger resource",
            ),
        ]
    }

    /// `nonzero_sizes` and `element_count`.
    fn size_messages<'v>(b: &'v TensorSpec<'v>) -> Vec<(Verdict<'v>, &'static str)> {
        vec![
            (Verdict::Sizes(Sizes::Unchecked), "--feature-level none: empty tensors are allowed"),
            (Verdict::Sizes(Sizes::Nonzero), "no dimension is 0"),
            (
                Verdict::Sizes(Sizes::Zero { input: b }),
                "B (b.npy) has shape [0, 3] with a dimension of size 0; DirectML rejects empty tensors. Use \
                 --feature-level none to allow them",
            ),
            (Verdict::Elements(Elements::Unlimited), "--feature-level none: no DirectML element limit"),
            (Verdict::Elements(Elements::NoShape), "skipped: the shapes have no common output shape"),
            (
                Verdict::Elements(Elements::Within { count: 4_294_967_295 }),
                "the output has 4294967295 elements (limit 4294967295)",
            ),
            (
                Verdict::Elements(Elements::Over { out: &[65536, 65537], count: Some(4_295_032_832) }),
                "the output [65536, 65537] has 4295032832 elements, more than DirectML's limit of 4294967295 \
                 (2^32 - 1); split the work or use --feature-level none",
            ),
            (
                Verdict::Elements(Elements::Over { out: &[1 << 32, 1 << 32], count: None }),
                "the output [4294967296, 4294967296] has over 2^64 elements, more than DirectML's limit of \
                 4294967295 (2^32 - 1); split the work or use --feature-level none",
            ),
        ]
    }
}
