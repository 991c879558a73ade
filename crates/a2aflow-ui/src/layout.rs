//! The run page's drawing of a workflow: the nodes and edges `a2aflow graph` draws (steps in
//! document order, labelled with their type; each edge with its condition, blank for an
//! unconditional one), placed in layers. A step's layer is one more than the deepest of its
//! predecessors, so every edge points down; within a layer, steps keep document order.

use a2aflow::model::Workflow;
use serde::Serialize;
use std::collections::HashMap;

/// One step of the drawing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    /// The step's name.
    pub name: String,
    /// Its step type (`ALL_SUCCESS`, …).
    pub step_type: &'static str,
    /// Its layer, from 0 (the roots).
    pub layer: usize,
    /// Its place within the layer, from 0.
    pub order: usize,
}

/// One edge of the drawing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphEdge {
    /// The source step.
    pub from: String,
    /// The target step.
    pub to: String,
    /// The condition, trimmed; empty for an unconditional edge.
    pub condition: String,
}

/// The whole drawing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Layout {
    /// The steps, in document order.
    pub nodes: Vec<Node>,
    /// The edges, in document order of their source step, then declaration order.
    pub edges: Vec<GraphEdge>,
    /// How many layers there are.
    pub layers: usize,
    /// The widest layer's step count.
    pub width: usize,
}

/// Lays out `workflow`. Edges to steps the document does not define are left out (as `a2aflow
/// graph` leaves them out); a cycle (a journaled workflow was validated, so there is none) is
/// cut where the walk meets it instead of looping.
pub fn layout(workflow: &Workflow) -> Layout {
    let index: HashMap<&str, usize> = workflow
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();
    let mut edges = Vec::new();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); workflow.steps.len()];
    for (i, step) in workflow.steps.iter().enumerate() {
        for edge in &step.next {
            let Some(&j) = index.get(&*edge.step) else {
                continue;
            };
            preds[j].push(i);
            edges.push(GraphEdge {
                from: step.name.clone(),
                to: edge.step.to_string(),
                condition: edge.condition.trim().to_owned(),
            });
        }
    }
    let layer = layers(&preds);
    let mut counts: Vec<usize> = Vec::new();
    let nodes = workflow
        .steps
        .iter()
        .zip(&layer)
        .map(|(step, &l)| {
            if counts.len() <= l {
                counts.resize(l + 1, 0);
            }
            let order = counts[l];
            counts[l] += 1;
            Node {
                name: step.name.clone(),
                step_type: step.step_type.as_str(),
                layer: l,
                order,
            }
        })
        .collect();
    Layout {
        nodes,
        edges,
        layers: counts.len(),
        width: counts.iter().copied().max().unwrap_or(0),
    }
}

/// The longest-path layer of each step, by an iterative depth-first walk over predecessors.
fn layers(preds: &[Vec<usize>]) -> Vec<usize> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut mark = vec![Mark::New; preds.len()];
    let mut layer = vec![0usize; preds.len()];
    for start in 0..preds.len() {
        if mark[start] != Mark::New {
            continue;
        }
        let mut stack = vec![(start, 0usize)];
        mark[start] = Mark::Open;
        while let Some(&mut (s, ref mut next)) = stack.last_mut() {
            if let Some(&p) = preds[s].get(*next) {
                *next += 1;
                if mark[p] == Mark::New {
                    mark[p] = Mark::Open;
                    stack.push((p, 0));
                }
                continue;
            }
            // Every predecessor is done (or open: a cycle, cut here).
            layer[s] = preds[s]
                .iter()
                .filter(|&&p| mark[p] == Mark::Done)
                .map(|&p| layer[p] + 1)
                .max()
                .unwrap_or(0);
            mark[s] = Mark::Done;
            stack.pop();
        }
    }
    layer
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2aflow::model::{LoadOptions, load_workflow_str};

    fn wf(text: &str) -> Workflow {
        match load_workflow_str(text, LoadOptions::STRICT) {
            Ok(l) => l.workflow,
            Err(e) => panic!("{e:?}"),
        }
    }

    #[test]
    fn a_diamond_puts_the_join_below_its_deepest_parent() {
        let w = wf(r#"{"id": "d", "steps": [
          {"name": "a", "subtasks": [{"agent": "x", "description": "t"}],
           "next": [{"step": "b"}, {"step": "c", "condition": " ok? "}, {"step": "d"}]},
          {"name": "b", "subtasks": [{"agent": "x", "description": "t"}], "next": [{"step": "c"}]},
          {"name": "c", "subtasks": [{"agent": "x", "description": "t"}], "next": [{"step": "d"}]},
          {"name": "d", "subtasks": [{"agent": "x", "description": "t"}]}
        ]}"#);
        let l = layout(&w);
        let at: Vec<(usize, usize)> = l.nodes.iter().map(|n| (n.layer, n.order)).collect();
        assert_eq!(at, vec![(0, 0), (1, 0), (2, 0), (3, 0)]);
        assert_eq!(l.edges.len(), 5);
        assert_eq!(l.edges[1].condition, "ok?");
        assert_eq!((l.layers, l.width), (4, 1));
    }

    #[test]
    fn independent_roots_share_a_layer_in_document_order() {
        let w = wf(r#"{"id": "p", "steps": [
          {"name": "one", "subtasks": [{"agent": "x", "description": "t"}]},
          {"name": "two", "subtasks": [{"agent": "x", "description": "t"}]}
        ]}"#);
        let l = layout(&w);
        assert_eq!(l.nodes[1].order, 1);
        assert_eq!((l.layers, l.width), (1, 2));
    }
}
