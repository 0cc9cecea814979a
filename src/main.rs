//! tensorop: DirectML element-wise subtract and squared difference over `.npy` files. The
//! binary is [`tensorop::app::main`]; everything else lives in the library.

fn main() -> std::process::ExitCode {
    tensorop::app::main()
}
