"""The embedded store lends its searching connections first come, first served: one that is
given back goes to the borrower that waited longest, never back to one that asks again at once,
and a borrower cancelled while it waits loses nothing."""

from __future__ import annotations

import asyncio

import pytest

from app.store.sqlite.db import Lender


async def test_a_thing_given_back_goes_to_the_longest_waiter_not_to_one_asking_again() -> None:
    lender = Lender(["a"])
    held = await lender.borrow()
    first = asyncio.create_task(lender.borrow())
    await asyncio.sleep(0)

    async def give_back_and_ask_again() -> str:
        lender.give_back(held)
        return await lender.borrow()  # at once, as a search that ends and starts the next does

    again = asyncio.create_task(give_back_and_ask_again())
    done, _ = await asyncio.wait([first, again], return_when=asyncio.FIRST_COMPLETED)

    assert done == {first}
    lender.give_back(await first)
    assert await again == "a"


async def test_borrowers_that_keep_asking_share_the_things_evenly() -> None:
    lender = Lender(["a", "b"])
    turns = [0] * 8
    halfway: list[int] = []

    async def borrower(index: int) -> None:
        for _ in range(12):
            thing = await lender.borrow()
            turns[index] += 1
            if sum(turns) == 48:
                halfway.extend(turns)
            await asyncio.sleep(0)  # the search itself
            lender.give_back(thing)

    await asyncio.gather(*(borrower(i) for i in range(8)))

    # Halfway, every borrower has had about its share: none was kept waiting for the others.
    assert max(halfway) - min(halfway) <= 1


@pytest.mark.parametrize(
    "handed_first",
    [
        pytest.param(False, id="cancelled_while_it_waits"),
        pytest.param(True, id="cancelled_once_handed_the_thing_before_it_ran"),
    ],
)
async def test_a_cancelled_borrower_loses_nothing(handed_first: bool) -> None:
    lender = Lender(["a"])
    held = await lender.borrow()
    cancelled = asyncio.create_task(lender.borrow())
    waiting = asyncio.create_task(lender.borrow())
    await asyncio.sleep(0)

    if handed_first:
        lender.give_back(held)
    cancelled.cancel()
    await asyncio.gather(cancelled, return_exceptions=True)
    if not handed_first:
        lender.give_back(held)

    assert await waiting == "a"
