//! Shared set-up of the fuzz targets.

/// libFuzzer's panic hook aborts at the panic, before any unwinding: a panic that docflow
/// itself catches (the PDF parser's, turned into a permanent `BadPdf`; a record's, turned
/// into `Release` by the batch runtime) would count as a crash although production
/// survives it. Restoring the default hook leaves those caught; a panic that escapes a
/// target still aborts the run (libfuzzer-sys catches it at the top and aborts).
pub fn init() {
    std::panic::set_hook(Box::new(|info| {
        eprintln!("panic (caught or not): {info}");
    }));
}
