//! The run page's integration tests: the JSON API over a real store and testkit agents, and the
//! page itself in headless chromium.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

mod api;
mod binding;
mod browser;
mod cdp;
mod child_panel;
mod event_window;
mod resume_page;
mod support;
mod timeline;
