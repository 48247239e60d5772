//! The two lists every registry keeps (elevators, sysctls, `[machine]` keys): what wblab ships,
//! which reference docs show whatever the build, and what the model reads, which adds the
//! test-only entries of `docs/extending.md` in test builds, so the tests exercise the way a
//! new entry goes in.

/// `registry!(SHIPPED, ALL: T, "what"; entries...; test: entries...)` declares `SHIPPED` (the
/// entries wblab ships, in the order tools list them) and `ALL` (the same, and in test builds
/// — `test` or the `test-extensions` feature — the `test:` entries after them).
#[macro_export]
macro_rules! registry {
    ($shipped:ident, $all:ident: $t:ty, $what:literal; $($e:expr),+ $(; test: $($x:expr),+)?) => {
        #[doc = concat!("The ", $what, " wblab ships, in the order tools list them: what reference docs show, whatever the build.")]
        pub static $shipped: &[$t] = &[$($e),+];
        #[doc = concat!("Every ", $what, " the model reads, in the order tools list them.")]
        #[cfg(not(any(test, feature = "test-extensions")))]
        pub static $all: &[$t] = $shipped;
        #[doc = concat!("Every ", $what, " the model reads, in the order tools list them, and the test-only ones.")]
        #[cfg(any(test, feature = "test-extensions"))]
        pub static $all: &[$t] = &[$($e),+ $(, $($x),+)?];
    };
}
