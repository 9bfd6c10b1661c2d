"""A run's metadata: the environment it measured on and the settings it ran with (results.json's
``environment`` and ``settings``), as frozen models that every reader sees in one shape.

As in pyperf's metadata, the part a plain run and each side of an A/B run share (the measurement
overrides, isolation, the device) sits at the top of ``settings``; an A/B side adds its ``ab`` entry, a
merged run its ``devices``. Each model keeps what it was given and nothing more: a key absent from the
file stays absent when written back, a null stays null, and keys this version does not know (files of
other versions, user tools) are kept as they are (``extra="allow"``). Fields are declared in the order
launchbench writes them, so a new run's results.json lists them in that order.

Older and hand-written environments name some items elsewhere (``gpu_name``, ``driver_version``,
``cuda.runtime``, ``cupy_version``, a top-level ``cpu``, a GPU given as its name); ``Environment``
moves them to their place as it is read, so callers read ``environment.gpu.name``,
``environment.driver``, ``environment.host.cpu`` and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema
from typing_extensions import Self


class Metadata(BaseModel):
    """A part of the metadata: frozen, open to unknown keys, written back with exactly the keys it was given."""

    model_config = ConfigDict(frozen=True, extra="allow", defer_build=True)  # built when first used

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        """The fields, as the published schemas describe them (the serializer writes the ones given)."""
        return handler({key: value for key, value in core_schema.items() if key != "serialization"})

    @model_serializer(mode="wrap")
    def _as_given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        given = self.model_fields_set | set(self.__pydantic_extra__ or {})
        return {key: value for key, value in data.items() if key in given}

    def without(self, *keys: str) -> Self:
        """This part with ``keys`` removed (absent when written)."""
        data = self.model_dump()
        return self.model_validate({k: v for k, v in data.items() if k not in keys})

    def recorded(self, key: str) -> bool:
        """Whether the file (or the writer) gave ``key``, null included."""
        return key in self.model_fields_set or key in (self.__pydantic_extra__ or {})

    @property
    def extra(self) -> dict[str, Any]:
        """The keys this version does not know, as read."""
        return dict(self.__pydantic_extra__ or {})


class GpuInfo(Metadata):
    index: int | None = None
    name: str | None = None
    uuid: str | None = None
    compute_capability: str | None = None
    multiprocessors: int | None = None
    memory_bytes: int | None = None
    pci_bus_id: int | None = None
    pci_address: str | None = None
    numa_node: int | None = None  # the GPU's NUMA node as sysfs says (None: no NUMA)
    local_cpus: str | None = None  # the CPUs local to it, as the kernel lists them ("0-15,32-47")


class HostInfo(Metadata):
    cpu: str | None = None
    cores: int | None = None
    platform: str | None = None
    hostname: str | None = None
    kernel: str | None = None
    governor: str | None = None


class GpuClocks(Metadata):
    """NVML's clocks as the run started (MHz)."""

    sm_mhz: float | None = None
    mem_mhz: float | None = None
    sm_max_mhz: float | None = None
    mem_max_mhz: float | None = None


# where older or hand-written environments put an item: (path there, path here)
_LEGACY: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("gpu_name",), ("gpu", "name")),
    (("driver_version",), ("driver",)),
    (("gpu", "driver"), ("driver",)),
    (("gpu", "driver_version"), ("driver",)),
    (("cuda", "runtime"), ("cuda_runtime",)),
    (("cuda_runtime_version",), ("cuda_runtime",)),
    (("cupy_version",), ("cupy",)),
    (("cpu",), ("host", "cpu")),
)


def _pop(data: dict[str, Any], path: tuple[str, ...]) -> Any:
    """Remove and return the value at ``path`` (None where absent); an emptied parent goes too."""
    if len(path) == 1:
        return data.pop(path[0], None)
    parent = data.get(path[0])
    if not isinstance(parent, dict) or path[1] not in parent:
        return None
    rest = {k: v for k, v in parent.items() if k != path[1]}
    if rest:
        data[path[0]] = rest
    else:
        del data[path[0]]
    return parent[path[1]]


def _put(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    """Set ``path`` to ``value`` unless something is already there."""
    if len(path) == 1:
        if data.get(path[0]) in (None, ""):
            data[path[0]] = value
        return
    parent = data.get(path[0])
    parent = dict(parent) if isinstance(parent, dict) else {}
    if parent.get(path[1]) in (None, ""):
        parent[path[1]] = value
    data[path[0]] = parent


def normalise_environment(raw: Mapping[str, Any]) -> dict[str, Any]:
    """An environment of any known layout in the layout launchbench writes (see the module's docstring)."""
    data = dict(raw)
    if isinstance(data.get("gpu"), str):
        data["gpu"] = {"name": data["gpu"]}
    if isinstance(data.get("cupy"), dict):
        data["cupy"] = data["cupy"].get("version")
    for there, here in _LEGACY:
        value = _pop(data, there) if _has(data, there) else None
        if value not in (None, ""):
            _put(data, here, value)
    return data


def _has(data: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    node: Any = data
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


class Environment(Metadata):
    """What a run measured on: the host (``host_environment``) and the GPU part (``collect_environment``)."""

    host: HostInfo = Field(default_factory=HostInfo)
    python: str | None = None
    cupy_build: str | None = None  # the distribution that installs CuPy ("cupy-cuda13x")
    launchbench: str | None = None
    git_commit: str | None = None
    time: str | None = None
    gpu: GpuInfo = Field(default_factory=GpuInfo)
    cuda_driver: str | None = None
    cuda_runtime: str | None = None
    cupy: str | None = None
    device_count: int | None = None
    nccl: str | None = None
    numpy: str | None = None
    cuda_bindings: str | None = None
    driver: str | None = None
    clocks: GpuClocks = Field(default_factory=GpuClocks)
    nvml: bool | None = None
    capture_timing: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _normalised(cls, data: Any) -> Any:
        return normalise_environment(data) if isinstance(data, Mapping) else data

    @classmethod
    def of(cls, env: Environment | Mapping[str, Any]) -> Environment:
        """An environment from a recorded one, a mapping of any known layout or an environment summary."""
        return env if isinstance(env, Environment) else cls.model_validate(env)


class AbSettings(Metadata):
    """An A/B side's own entry: the pair's id, the side (A or B), its variant and the other side's run."""

    id: str | None = None
    side: str | None = None
    variant: dict[str, Any] | None = None
    paired_with: str | None = None
    cpus: list[int] | None = None


class Overrides(Metadata):
    """The measurement settings the command line gave (``settings.overrides``): only those given are set."""

    target_noise: float | None = None
    latency_target_noise: float | None = None
    max_time: float | None = None
    min_samples: int | None = None
    max_samples: int | None = None
    warmup_time: float | None = None
    passes: int | None = None

    def given(self) -> dict[str, Any]:
        """The values given, by name (what ``MeasureSettings`` takes over the file's)."""
        return self.model_dump()


class Settings(Metadata):
    """How a run ran: the part every run records (overrides, isolation, device), then what a case limit,
    a shard, a floor run, an A/B side or a merged run on several devices adds."""

    overrides: Overrides = Field(default_factory=Overrides)
    isolate: bool | None = None
    device: int | None = None
    max_cases: int | None = None
    shard: str | None = None  # "K/N" where the run measured one shard of the cases
    floor: dict[str, Any] | None = None  # a floor run: its floor: block
    measure: dict[str, Any] | None = None  # a floor run: the measure settings it ran under
    ab: AbSettings = Field(default_factory=AbSettings)
    devices: dict[str, Any] | None = None  # a run on several devices: each device's CPUs (and ab id)
