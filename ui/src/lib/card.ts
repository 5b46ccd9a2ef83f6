// A result card to share (drawn by the backend as a PNG): the pair, this machine, the verdict the
// way the Run view words it, both rates, and the start of the drafted run's output by provenance.
import type { CardChart, CardPiece, Comparison, Report, TokenView } from "./types";
import { heroOf } from "./verdict";
import { strategyLabel } from "./settings";

/// The excerpt's length at most (characters): about the five lines the card shows.
export const CARD_EXCERPT_CHARS = 420;

/// "Apple M3 Pro · 36 GiB · Metal": the device the target ran on, the memory, the backend.
export function machineLine(r: Report): string {
  const device = r.runtime?.device || r.machine.cpu;
  const gib = Math.round(r.machine.memory_total / 2 ** 30);
  return [device, `${gib} GiB`, r.runtime?.backend ?? r.machine.gpu_backend].filter((x) => x).join(" · ");
}

/// The pair as the card names it: the target, and what drafted for it.
export function pairLine(r: Report): string {
  const how = r.strategy ? strategyLabel(r.strategy) : "";
  const drafter = r.draft ? `${r.draft.name}${how ? ` (${how})` : ""}` : how;
  return drafter ? `${r.target.name} with ${drafter}` : r.target.name;
}

/// The drafted run's tokens, merged into runs of one provenance, cut at CARD_EXCERPT_CHARS.
export function excerpt(tokens: TokenView[]): CardPiece[] {
  const out: CardPiece[] = [];
  let left = CARD_EXCERPT_CHARS;
  for (const t of tokens) {
    if (left <= 0) break;
    const text = t.text.slice(0, left);
    left -= text.length;
    const drafted = t.source === "draft";
    const last = out[out.length - 1];
    // Merged by word: a card draws pieces, and each piece is one text element.
    if (last && last.drafted === drafted && !text.includes(" ") && !text.includes("\n")) last.text += text;
    else out.push({ text, drafted });
  }
  return out;
}

/// A card from a finished comparison: null until both runs have a report.
export function resultCard(speedup: number | null, baseline: Report | null, speculative: Report | null,
  comparison: Comparison | null, tokens: TokenView[]): CardChart | null {
  if (!baseline || !speculative) return null;
  const h = heroOf(speedup, baseline, speculative, comparison);
  const tone = h.tone === "none" ? "noise" : h.tone;
  return {
    title: pairLine(speculative),
    machine: machineLine(speculative),
    headline: h.big,
    tone,
    detail: [h.rates, h.output].filter((x) => x).join(" · "),
    reason: h.reason,
    baseline: { median: baseline.tokens_per_s, min: baseline.tokens_per_s, max: baseline.tokens_per_s },
    speculative: { median: speculative.tokens_per_s, min: speculative.tokens_per_s, max: speculative.tokens_per_s },
    excerpt: excerpt(tokens),
  };
}

/// The card's file name: the pair and the verdict.
export function cardName(card: CardChart): string {
  return `${card.title} ${card.headline}`;
}
