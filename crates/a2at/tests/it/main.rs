//! Integration tests of `a2at`: one test binary, a module per area.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod roundtrip;
mod vectors;
