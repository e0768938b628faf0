//! Rebuilds the crate's tests when a migration is added or changed: `#[sqlx::test(migrations
//! = "../migrations")]` in tests/ embeds `migrations/` at compile time, and without this a
//! warm build keeps the old set (a test then fails on a missing column). As shared/build.rs.

fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
