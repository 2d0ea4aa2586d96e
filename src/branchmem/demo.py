"""The Chengdu/Hangzhou story end to end: ``python -m branchmem.demo``."""

from __future__ import annotations

from . import Memory


def _show(mem: Memory, anchor: str, title: str) -> None:
    print(f"\n  {title} (anchor {anchor}):")
    for record in mem.visible(anchor):
        print(f"    - [{record.kind}] {record.content}")


def main() -> None:
    mem = Memory(mode="strict")
    print("1. The user plans a move; the extractor writes facts as the chat goes.")
    mem.add_event("u1", content="Hi! I need help planning a move.")
    mem.add_event("a1", "u1", role="assistant", content="Happy to help. Where to?")
    mem.add_event("u2", "a1", content="I'm moving to Chengdu next month.")
    mem.add_event("a2", "u2", role="assistant", content="Chengdu! Spicy food ahead.")
    mem.add_record("planning", sources=["u1"], content="user is planning a move")
    mem.add_record("city@chengdu", sources=["u2"], content="moving to Chengdu", key="city")
    mem.add_record("food", sources=["a2", "city@chengdu"], content="will eat spicy food")

    print("2. The user edits u2: the Chengdu turn becomes a sibling branch.")
    mem.add_event("u2b", "a1", content="I'm moving to Hangzhou next month.")
    mem.add_event("a2b", "u2b", role="assistant", content="Hangzhou, by the West Lake.")
    mem.add_record("city@hangzhou", sources=["u2b"], content="moving to Hangzhou", key="city")
    mem.add_event("u3b", "a2b", content="My budget is 4000 a month.")
    mem.add_record("budget", sources=["u3b"], content="rent budget 4000", key="budget")

    _show(mem, "u3b", "Visible on the edited branch")
    _show(mem, "a2", "Visible after switching back to the Chengdu branch")
    _show(mem, "u3b", "And forward again: nothing was marked, deleted or rewritten")

    print("\n3. Why is the Chengdu fact hidden on the Hangzhou branch?")
    for record_id in ("city@chengdu", "food", "planning"):
        why = mem.explain(record_id, "u3b")
        fork = f", fork at {why.fork}" if why.fork else ""
        source = f", first offending source {why.source}" if why.source else ""
        print(f"    {record_id}: {why.reason}{source}{fork}")

    print("\n4. Without an anchor, strict mode returns nothing:", mem.visible(None))
    print("   The current city at u3b:", mem.current("city", "u3b").content)  # type: ignore[union-attr]
    decisions = mem.report()["decisions"]
    print("   Decisions so far:", ", ".join(f"{k}={v}" for k, v in decisions.items()))


if __name__ == "__main__":
    main()
