//! Rebuilds the crate when a migration is added or changed: `sqlx::migrate!` embeds
//! `migrations/` at compile time, and without this a warm build keeps the old set (the
//! tests then fail on a missing column). What `sqlx migrate build-script` generates.

fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
