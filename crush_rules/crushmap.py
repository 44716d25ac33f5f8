"""A read-only model of a CRUSH map, built from ``crushtool --dump`` JSON.

The dump is the exact source: weights are 16.16 integers there, while
crushtool's text rounds them to 3 decimals.  Shadow buckets (``host~hdd``)
are the per-device-class copies of the tree that ``take <root> class <c>``
really walks; we need their ids and weights to make new rules draw the same
way as the class rules do.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import CrushError


@dataclass(frozen=True)
class Item:
    id: int
    weight: int  # 16.16 fixed point


@dataclass(frozen=True)
class Bucket:
    id: int
    name: str
    type_name: str
    alg: str
    items: tuple[Item, ...]

    @property
    def weight(self) -> int:
        return sum(item.weight for item in self.items)

    @property
    def is_shadow(self) -> bool:
        return "~" in self.name


@dataclass(frozen=True)
class Step:
    op: str
    item: int | None = None
    item_name: str | None = None
    num: int | None = None
    type: str | None = None


@dataclass(frozen=True)
class Rule:
    id: int
    name: str
    type: int
    min_size: int
    max_size: int
    steps: tuple[Step, ...]

    def taken_items(self) -> tuple[int, ...]:
        return tuple(
            step.item for step in self.steps if step.op == "take" and step.item is not None
        )


@dataclass(frozen=True)
class ChooseArg:
    bucket_id: int
    weight_set: tuple[tuple[int, ...], ...] = ()
    ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class CrushMap:
    devices: Mapping[int, str | None]  # device id -> class (None: no class)
    device_names: Mapping[int, str]
    types: Mapping[int, str]
    buckets: Mapping[int, Bucket]
    rules: Mapping[int, Rule]
    choose_args: Mapping[int, tuple[ChooseArg, ...]]
    tunables: Mapping[str, int] = field(default_factory=dict)

    # -- lookups -------------------------------------------------------------

    def bucket_named(self, name: str) -> Bucket | None:
        for bucket in self.buckets.values():
            if bucket.name == name:
                return bucket
        return None

    def rule_named(self, name: str) -> Rule | None:
        for rule in self.rules.values():
            if rule.name == name:
                return rule
        return None

    def shadow_of(self, bucket: Bucket, device_class: str) -> Bucket | None:
        """The ``<bucket>~<class>`` shadow bucket, if Ceph made one."""
        return self.bucket_named(f"{bucket.name}~{device_class}")

    def devices_under(self, bucket_id: int) -> Iterator[int]:
        for item in self.buckets[bucket_id].items:
            if item.id >= 0:
                yield item.id
            else:
                yield from self.devices_under(item.id)

    def class_weight(self, bucket_id: int, device_class: str) -> int:
        """Sum of the weights of ``device_class`` devices under a real bucket."""
        total = 0
        for item in self.buckets[bucket_id].items:
            if item.id >= 0:
                total += item.weight if self.devices.get(item.id) == device_class else 0
            else:
                total += self.class_weight(item.id, device_class)
        return total

    def device_weights_under(self, bucket_id: int) -> dict[int, int]:
        """Device id -> its CRUSH weight inside the subtree of a real bucket."""
        weights: dict[int, int] = {}
        for item in self.buckets[bucket_id].items:
            if item.id >= 0:
                weights[item.id] = item.weight
            else:
                weights.update(self.device_weights_under(item.id))
        return weights

    def buckets_under(self, bucket_id: int) -> Iterator[Bucket]:
        """The bucket and every bucket below it, parents before children."""
        bucket = self.buckets[bucket_id]
        yield bucket
        for item in bucket.items:
            if item.id < 0:
                yield from self.buckets_under(item.id)


def _step(raw: Mapping[str, Any]) -> Step:
    return Step(
        op=str(raw["op"]),
        item=raw.get("item"),
        item_name=raw.get("item_name"),
        num=raw.get("num"),
        type=raw.get("type"),
    )


def _fixed(value: float) -> int:
    return round(value * 0x10000)


def crushmap_from_dump(dump: Mapping[str, Any]) -> CrushMap:
    """Build the model from ``crushtool -i MAP --dump`` (JSON)."""
    try:
        devices = {int(d["id"]): d.get("class") for d in dump["devices"]}
        device_names = {int(d["id"]): str(d["name"]) for d in dump["devices"]}
        types = {int(t["type_id"]): str(t["name"]) for t in dump["types"]}
        buckets = {
            int(b["id"]): Bucket(
                id=int(b["id"]),
                name=str(b["name"]),
                type_name=str(b["type_name"]),
                alg=str(b["alg"]),
                items=tuple(Item(int(i["id"]), int(i["weight"])) for i in b["items"]),
            )
            for b in dump["buckets"]
        }
        rules = {
            int(r["rule_id"]): Rule(
                id=int(r["rule_id"]),
                name=str(r["rule_name"]),
                type=int(r["type"]),
                min_size=int(r.get("min_size", 1)),
                max_size=int(r.get("max_size", 10)),
                steps=tuple(_step(s) for s in r["steps"]),
            )
            for r in dump["rules"]
        }
        choose_args = {
            int(index): tuple(
                ChooseArg(
                    bucket_id=int(arg["bucket_id"]),
                    weight_set=tuple(
                        tuple(_fixed(float(w)) for w in position)
                        for position in arg.get("weight_set", [])
                    ),
                    ids=tuple(int(i) for i in arg.get("ids", [])),
                )
                for arg in args
            )
            for index, args in dump.get("choose_args", {}).items()
        }
        tunables = {
            str(k): int(v) for k, v in dump.get("tunables", {}).items() if isinstance(v, int)
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise CrushError(f"unexpected crushtool --dump output ({exc!r})") from exc
    return CrushMap(devices, device_names, types, buckets, rules, choose_args, tunables)
