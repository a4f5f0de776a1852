"""What kind of lesson a repair is: its ``category``, from its trigger and shape.

| trigger                      | category                                      |
|------------------------------|-----------------------------------------------|
| ``user.correction``          | ``correction`` (the user fixed a fact/value)  |
| ``user.negative``            | ``correction`` (the user said it was wrong)   |
| ``user.preference``          | ``preference``                                |
| ``user.constraint``          | ``constraint`` (a rule or convention)         |
| ``failure-burst``            | ``tool-quirk`` when the session also has a    |
|                              | successful trace (the tool works another way),|
|                              | else ``failure``                              |
| ``manual``                   | the user text's shape as above, else like a   |
|                              | failure burst                                 |

Repairs written before migration 0005 have no category (NULL).
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["CATEGORIES", "Category", "category_for"]

Category = Literal["failure", "correction", "preference", "constraint", "tool-quirk"]
CATEGORIES: tuple[str, ...] = get_args(Category)

_BY_SHAPE: dict[str, Category] = {
    "correction": "correction",
    "negative": "correction",
    "preference": "preference",
    "constraint": "constraint",
}


def category_for(trigger: str, shape: str | None = None, *, has_success: bool = False) -> Category:
    """The category of a repair (table in the module docstring)."""
    if trigger.startswith("user."):
        return _BY_SHAPE.get(trigger.removeprefix("user."), "correction")
    if trigger == "manual" and shape in _BY_SHAPE:
        return _BY_SHAPE[shape]
    return "tool-quirk" if has_success else "failure"
