//! Responses kept for the Responses API's `previous_response_id`: the conversation each ended, by
//! response id, the oldest dropped first past [`KEPT`] responses or [`KEPT_BYTES`] of text.

use std::collections::VecDeque;

use draftlab_core::decoding::template::ChatMessage;

/// The most responses kept for `previous_response_id`.
pub const KEPT: usize = 256;
/// The most bytes of conversation they keep in all.
pub const KEPT_BYTES: usize = 64 << 20;

/// Kept conversations by response id, oldest first.
#[derive(Default)]
pub struct Kept {
    entries: VecDeque<(String, Vec<ChatMessage>, usize)>,
    bytes: usize,
}

impl Kept {
    pub fn get(&self, id: &str) -> Option<Vec<ChatMessage>> {
        self.entries.iter().find(|(k, _, _)| k == id).map(|(_, m, _)| m.clone())
    }

    pub fn put(&mut self, id: String, messages: Vec<ChatMessage>) {
        let size: usize = messages.iter().flat_map(ChatMessage::texts).map(str::len).sum::<usize>() + 64;
        if size > KEPT_BYTES {
            return;
        }
        while self.entries.len() >= KEPT || self.bytes + size > KEPT_BYTES {
            let Some((_, _, n)) = self.entries.pop_front() else { break };
            self.bytes -= n;
        }
        self.bytes += size;
        self.entries.push_back((id, messages, size));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_are_dropped_past_the_bound() {
        let mut k = Kept::default();
        for i in 0..KEPT + 3 {
            k.put(format!("r{i}"), vec![ChatMessage::new("user", "x")]);
        }
        assert_eq!(k.entries.len(), KEPT);
        assert!(k.get("r0").is_none() && k.get(&format!("r{}", KEPT + 2)).is_some());
    }
}
