//! `--dxdispatch DIR`: a job as a DxDispatch repro. Filled in below.
