//! The run page's integration tests: the JSON API over a real store and testkit agents, and the
//! page itself in headless chromium.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod api;
mod binding;
mod browser;
mod cdp;
mod child_panel;
mod cut_stream;
mod event_window;
mod gates_and_failures;
mod headers;
mod resume_page;
mod support;
mod timeline;
