"""The conformance cases of ``as_of`` (docs/semantics.md "As of"), mixed into
``BackendConformance`` so every backend and face runs them; the differential test compares
as-of decisions with the oracle on random histories."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from branchmem import InvalidInput, Memory, NotFoundError


def ids(records: list) -> list[str]:  # type: ignore[type-arg]
    return [record.id for record in records]


def last_seq(mem: Memory) -> int:
    """The newest arrival number: each write call ends with its audit entry."""
    return mem.audit()[-1].seq


def move(mem: Memory) -> None:
    """Chengdu, then the edit to Hangzhou, each with its keyed fact."""
    mem.add_event("u1", content="Hi, I need help planning a move.")
    mem.add_event("a1", "u1", role="assistant", content="Where to?")
    mem.add_event("u2", "a1", content="I'm moving to Chengdu next month.")
    mem.add_record("f-chengdu", sources=["u2"], content="moving to Chengdu", key="city")
    mem.add_event("u2b", "a1", content="I'm moving to Hangzhou next month.")
    mem.add_record("f-hangzhou", sources=["u2b"], content="moving to Hangzhou", key="city")


class AsOfConformance:
    """``visible``, ``current``, ``search``, ``context``, ``deliveries``,
    ``stale_deliveries``, ``explain``, ``stale`` and ``record_views`` as the memory stood
    then."""

    def test_as_of_leaves_out_what_was_written_later(self, mem: Memory) -> None:
        move(mem)
        before_chengdu = mem.get_record("f-chengdu").seq - 1
        after_chengdu = last_seq(mem) - 2  # before u2b and f-hangzhou arrived
        assert ids(mem.visible("u2", as_of=before_chengdu)) == []
        assert ids(mem.visible("u2", as_of=after_chengdu)) == ["f-chengdu"]
        assert mem.current("city", "u2b", as_of=after_chengdu) is None
        now = mem.current("city", "u2b")
        assert now is not None and now.id == "f-hangzhou"
        assert ids(mem.visible("u2", as_of=0)) == []

    def test_as_of_undoes_later_withdrawals_and_restores(self, mem: Memory) -> None:
        move(mem)
        written = last_seq(mem)
        mem.withdraw("f-chengdu")
        withdrawn = last_seq(mem)
        mem.restore("f-chengdu")
        assert ids(mem.visible("u2", as_of=written)) == ["f-chengdu"]
        assert ids(mem.visible("u2", as_of=withdrawn)) == []
        assert ids(mem.visible("u2")) == ["f-chengdu"]

    def test_as_of_undoes_later_supersedes_and_retractions(self, mem: Memory) -> None:
        move(mem)
        mem.add_event("u3", "u2", content="Actually Chengdu is off; Xi'an.")
        mem.add_record("f-xian", sources=["u3"], content="moving to Xi'an", key="town")
        written = last_seq(mem)
        mem.supersede("f-xian", "f-chengdu")
        superseded = last_seq(mem)
        mem.retract("x1", sources=["u3"], targets=["f-xian"], reason="not moving at all")
        assert ids(mem.visible("u3", as_of=written)) == ["f-chengdu", "f-xian"]
        assert ids(mem.visible("u3", as_of=superseded)) == ["f-xian"]
        assert ids(mem.visible("u3", kind="fact")) == []
        held = mem.current("city", "u3", as_of=written)
        assert held is not None and held.id == "f-chengdu"
        assert mem.current("city", "u3") is None

    def test_as_of_shows_the_revision_current_then(self, mem: Memory) -> None:
        move(mem)
        written = last_seq(mem)
        mem.revise("f-chengdu", content="moving to Chengdu in May")
        (then,) = mem.visible("u2", as_of=written)
        assert (then.revision, then.content) == (1, "moving to Chengdu")
        assert mem.visible("u2")[0].revision == 2

    def test_as_of_never_brings_erased_text_back(self, mem: Memory) -> None:
        move(mem)
        mem.add_record("f-summary", sources=["f-chengdu"], content="a Chengdu summary")
        written = last_seq(mem)
        mem.erase("u2")
        assert ids(mem.visible("u2", as_of=written)) == []
        assert mem.current("city", "u2", as_of=written) is None
        text = mem.context("u2", as_of=written).text
        assert "Chengdu" not in text and "planning a move" in text

    def test_search_as_of_ranks_the_records_of_then(self, mem: Memory) -> None:
        move(mem)
        written = last_seq(mem)
        mem.revise("f-chengdu", content="relocating to Chengdu in May")
        revised = last_seq(mem)
        mem.withdraw("f-chengdu")
        (then,) = mem.search("moving", "u2", as_of=written)
        assert (then.record.id, then.record.revision) == ("f-chengdu", 1)
        assert then.record.content == "moving to Chengdu"
        assert mem.search("moving", "u2", as_of=revised) == []  # revision 2 says relocating
        (relocating,) = mem.search("relocating", "u2", as_of=revised)
        assert relocating.record.revision == 2
        assert mem.search("relocating", "u2") == []  # withdrawn since
        hits = mem.search("moving", "u2b", as_of=written, k=5)
        assert [hit.record.id for hit in hits] == ["f-hangzhou"]
        mem.erase("u2")
        assert mem.search("Chengdu", "u2", as_of=written) == []  # erased text stays gone
        with pytest.raises(InvalidInput, match="as_of"):
            mem.search("moving", "u2", as_of="yesterday")

    def test_as_of_names_a_time_as_well(self, mem: Memory) -> None:
        move(mem)
        stamped = next(e for e in mem.audit() if e.ids == ("f-chengdu",))
        moment = datetime.fromtimestamp(stamped.time, UTC)
        assert ids(mem.visible("u2", as_of=moment.isoformat())) == ["f-chengdu"]
        naive = moment.replace(tzinfo=None).isoformat()  # a time without a zone is UTC
        assert ids(mem.visible("u2", as_of=naive)) == ["f-chengdu"]
        assert mem.visible("u2", as_of="2001-01-01T00:00:00Z") == []
        assert ids(mem.visible("u2", as_of=str(stamped.seq))) == ["f-chengdu"]

    @pytest.mark.parametrize("bad", [-1, "yesterday", 1.5, True])
    def test_as_of_refuses_what_names_no_point(self, mem: Memory, bad: object) -> None:
        move(mem)
        with pytest.raises(InvalidInput, match="as_of"):
            mem.visible("u2", as_of=bad)  # type: ignore[arg-type]

    def test_context_as_of_shows_the_messages_and_records_of_then(self, mem: Memory) -> None:
        move(mem)
        written = last_seq(mem)
        mem.add_event("u4", "u2", content="Also I have a cat.")
        mem.withdraw("u2")
        then = mem.context("u4", as_of=written)
        assert "I'm moving to Chengdu" in then.text  # withdrawn only later
        assert "a cat" not in then.text  # had not arrived
        assert ("f-chengdu", 1) in then.items
        now = mem.context("u4")
        assert "I'm moving to Chengdu" not in now.text and "a cat" in now.text

    def test_context_as_of_is_never_delivered(self, mem: Memory) -> None:
        move(mem)
        with pytest.raises(InvalidInput, match="as_of"):
            mem.context("u2", session="s1", as_of=1)
        assert mem.deliveries("s1") == []

    def test_deliveries_as_of_lists_those_made_by_then(self, mem: Memory) -> None:
        move(mem)
        mem.context("u2", session="s1")
        first = last_seq(mem)
        mem.context("u2b", session="s1")
        assert [d.anchor for d in mem.deliveries("s1", as_of=first)] == ["u2"]
        assert [d.anchor for d in mem.deliveries("s1")] == ["u2", "u2b"]
        assert mem.deliveries("s1", as_of=0) == []

    def test_cross_tree_as_of_reads_the_heads_of_then(self, mem: Memory) -> None:
        move(mem)
        mem.add_event("w1", tree="work", content="I lead the data team.")
        mem.add_record("f-team", sources=["w1"], content="leads the data team")
        mem.add_event("w2", "w1", content="I moved to the platform team.")
        mem.add_record("f-platform", sources=["w2"], content="platform team")
        mem.set_head("w1")
        first_head = last_seq(mem)
        mem.set_head("w2")
        assert ids(mem.visible("u2", cross_tree=True, as_of=first_head)) == [
            "f-team",
            "f-chengdu",
        ]
        assert "f-platform" in ids(mem.visible("u2", cross_tree=True))
        assert ids(mem.visible("u2", cross_tree=True, as_of=first_head - 1)) == ["f-chengdu"]

    def test_as_of_reads_where_events_lie_as_known_now(self, mem: Memory) -> None:
        mem.add_event("q0", content="the question")
        mem.add_record("f-early", sources=["q1"], content="written before its source")
        written = last_seq(mem)
        assert mem.explain("f-early", "q0").reason == "unknown_source"  # asked then
        mem.add_event("q1", "q0", content="the answer")  # where f-early always belonged
        assert ids(mem.visible("q1", as_of=written)) == ["f-early"]
        assert ids(mem.visible("q0", as_of=written)) == []  # its source lies below q0

    def test_explain_as_of_gives_the_reason_of_then(self, mem: Memory) -> None:
        move(mem)
        written = last_seq(mem)
        mem.retract("x1", sources=["u2"], targets=["f-chengdu"], reason="not moving")
        assert mem.explain("f-chengdu", "u2").reason == "retracted"
        then = mem.explain("f-chengdu", "u2", as_of=written)
        assert (then.reason, then.visible, then.revision) == ("visible", True, 1)
        assert mem.is_visible("f-chengdu", "u2", as_of=written)
        assert not mem.is_visible("f-chengdu", "u2")
        with pytest.raises(NotFoundError, match="as of"):  # written after the point
            mem.explain("x1", "u2", as_of=written)
        with pytest.raises(InvalidInput, match="as_of"):
            mem.explain("f-chengdu", "u2", as_of="yesterday")

    def test_stale_as_of_is_what_was_stale_then(self, mem: Memory) -> None:
        move(mem)
        mem.add_record("summary", sources=["f-chengdu"], content="user moves to Chengdu")
        written = last_seq(mem)
        mem.revise("f-chengdu", content="moving to Chengdu in May")
        assert ids(mem.stale("u2")) == ["summary"]  # built on revision 1
        assert mem.stale("u2", as_of=written) == []
        assert ids(mem.visible("u2", as_of=written)) == ["f-chengdu", "summary"]

    def test_record_views_as_of_are_the_records_of_then(self, mem: Memory) -> None:
        mem.add_event("u1", content="Hi, I need help planning a move.")
        mem.add_event("a1", "u1", role="assistant", content="Where to?")
        mem.add_event("u2", "a1", content="I'm moving to Chengdu next month.")
        mem.add_record("f-chengdu", sources=["u2"], content="moving to Chengdu", key="city")
        written = last_seq(mem)
        mem.revise("f-chengdu", content="moving to Chengdu in May")
        mem.add_event("u2b", "a1", content="I'm moving to Hangzhou next month.")
        mem.add_record("f-hangzhou", sources=["u2b"], content="moving to Hangzhou", key="city")
        now = {v.explanation.record_id: v for v in mem.record_views("u2")}
        then = {v.explanation.record_id: v for v in mem.record_views("u2", as_of=written)}
        assert sorted(now) == ["f-chengdu", "f-hangzhou"] and list(then) == ["f-chengdu"]
        assert (then["f-chengdu"].content, then["f-chengdu"].explanation.revision) == (
            "moving to Chengdu",
            1,
        )
        assert now["f-chengdu"].content == "moving to Chengdu in May"
        assert mem.record_views("u2", as_of=0) == []

    def test_stale_deliveries_as_of_judges_the_deliveries_of_then(self, mem: Memory) -> None:
        move(mem)
        mem.context("u2", session="s1")
        delivered = last_seq(mem)
        mem.revise("f-chengdu", content="moving to Chengdu in May")
        revised = last_seq(mem)
        mem.context("u2b", session="s1")
        delivered_again = last_seq(mem)
        mem.set_head("u2")  # judged at the head of the latest delivery's tree from now on

        def judged(as_of: int | None) -> list[tuple[str, str, str | None]]:
            found = mem.stale_deliveries("s1", as_of=as_of)
            return [(s.record_id, s.reason, s.anchor) for s in found]

        assert judged(delivered) == []  # as given
        assert judged(revised) == [("f-chengdu", "revised", "u2")]  # the later delivery not yet
        # no head then: judged where it was given last, where Chengdu is off the path
        assert judged(delivered_again) == [("f-chengdu", "off_path", "u2b")]
        assert judged(None) == [
            ("f-hangzhou", "off_path", "u2"),
            ("f-chengdu", "revised", "u2"),
        ]
        assert mem.stale_deliveries("s1", "u2b", as_of=revised)[0].reason == "off_path"
