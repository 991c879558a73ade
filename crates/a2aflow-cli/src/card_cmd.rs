//! `a2aflow card URL`: fetch an agent card (with `A2A-Version: 1.0`) and show what a client needs.

use crate::OutputFormat;
use crate::terminal::{block, inline};
use a2aflow::fetch_agent_cards;
use a2aflow::model::a2a::AgentCard;

/// A readable summary of a card.
pub fn summary(card: &AgentCard) -> String {
    let mut out = format!(
        "{} {}\n  {}\n",
        inline(&card.name),
        inline(&card.version),
        block(&card.description, "  ")
    );
    out.push_str("  bindings:\n");
    for i in &card.supported_interfaces {
        out.push_str(&format!(
            "    {} {} ({})\n",
            inline(&i.protocol_binding),
            inline(&i.url),
            inline(&i.protocol_version)
        ));
    }
    out.push_str(&format!(
        "  streaming: {}\n",
        card.capabilities.streaming.unwrap_or(false)
    ));
    let extensions: Vec<String> = card
        .capabilities
        .extensions
        .iter()
        .flatten()
        .map(|e| {
            format!(
                "{}{}",
                inline(&e.uri),
                if e.required.unwrap_or(false) {
                    " (required)"
                } else {
                    ""
                }
            )
        })
        .collect();
    out.push_str(&format!(
        "  extensions: {}\n",
        if extensions.is_empty() {
            "none".into()
        } else {
            extensions.join(", ")
        }
    ));
    let schemes: Vec<String> = card
        .security_schemes
        .iter()
        .flatten()
        .map(|(n, _)| inline(n))
        .collect();
    out.push_str(&format!(
        "  security schemes: {}\n",
        if schemes.is_empty() {
            "none".into()
        } else {
            schemes.join(", ")
        }
    ));
    out.push_str(&format!(
        "  skills: {}\n",
        card.skills
            .iter()
            .map(|s| inline(&s.id))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    out
}

/// Runs the subcommand; returns the exit code.
pub fn run(url: &str, format: OutputFormat, config: Option<&std::path::Path>) -> u8 {
    let config = match crate::load_config(config) {
        Ok(c) => c,
        Err(f) => {
            eprintln!("a2aflow card: {}", inline(&f.to_string()));
            return 2;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("a2aflow card: cannot start the async runtime: {e}");
            return 2;
        }
    };
    match runtime.block_on(fetch_agent_cards(&[url.to_owned()], &config)) {
        Ok(cards) => {
            for card in &cards {
                match format {
                    OutputFormat::Text => print!("{}", summary(card)),
                    OutputFormat::Json => match serde_json::to_string_pretty(card) {
                        Ok(j) => println!("{}", crate::terminal::json(&j)),
                        Err(e) => {
                            eprintln!("a2aflow card: {e}");
                            return 1;
                        }
                    },
                }
            }
            0
        }
        Err(f) => {
            eprintln!("a2aflow card: {}", inline(&f.to_string()));
            1
        }
    }
}
