"""GPU power sampling with NVML in a background thread, written as ``nvidia-smi`` CSV.

The file looks like ``nvidia-smi --query-gpu=timestamp,index,power.draw,utilization.gpu,
memory.used --format=csv,nounits -lms <interval>`` output (log-formats.md §2.1)::

    timestamp, index, power.draw [W], utilization.gpu [%], memory.used [MiB]
    2025/01/01 12:00:00.100, 0, 412.37, 98, 60211

one row per GPU per poll, ``index`` being NVML's device index (what ``nvidia-smi`` prints) and
the timestamp local time, like the step lines, so :func:`trainscale.ingest.power_smi.
parse_nvidia_smi_csv` and :func:`~trainscale.ingest.power.align_power_to_steps` read it as is.

``power.draw`` is ``nvmlDeviceGetPowerUsage`` (mW → W). Where NVML is missing (no
``nvidia-ml-py``, no driver, no GPU), :func:`open_nvml` warns and returns None: the harness runs
on and the manifest lists no power log.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

__all__ = ["CSV_HEADER", "GpuSample", "NvmlReader", "PowerReader", "PowerSampler", "open_nvml"]

#: Header line of the CSV (``nvidia-smi --format=csv,nounits`` keeps the units in the header).
CSV_HEADER = "timestamp, index, power.draw [W], utilization.gpu [%], memory.used [MiB]"


@dataclass(frozen=True, slots=True)
class GpuSample:
    """One GPU's reading at one poll."""

    index: int
    """NVML device index."""
    power_w: float
    """Board power draw, W."""
    util_gpu_pct: float
    """GPU utilisation over the driver's last sample period, %."""
    mem_used_mib: float
    """Device memory in use, MiB (2**20 bytes)."""


class PowerReader(Protocol):
    """Something that reads the GPUs being sampled (NVML, or a fake in tests)."""

    def read(self) -> list[GpuSample]:
        """One sample per GPU, in index order."""
        ...

    def close(self) -> None:
        """Release the library."""
        ...


class NvmlReader:
    """Reads power, utilisation and memory of given GPUs through ``pynvml``."""

    def __init__(self, pynvml: object, handles: list[object]) -> None:
        self._nvml = pynvml
        self._handles = handles
        self._indices = [int(pynvml.nvmlDeviceGetIndex(h)) for h in handles]  # type: ignore[attr-defined]

    @property
    def indices(self) -> list[int]:
        """NVML indices of the sampled GPUs."""
        return list(self._indices)

    def read(self) -> list[GpuSample]:
        """Read every GPU once; a failed field reads as NaN."""
        nvml = self._nvml
        samples = []
        for index, handle in zip(self._indices, self._handles, strict=True):
            samples.append(
                GpuSample(
                    index=index,
                    power_w=_try(lambda h=handle: nvml.nvmlDeviceGetPowerUsage(h) / 1000.0),  # type: ignore[attr-defined]
                    util_gpu_pct=_try(
                        lambda h=handle: float(nvml.nvmlDeviceGetUtilizationRates(h).gpu)  # type: ignore[attr-defined]
                    ),
                    mem_used_mib=_try(
                        lambda h=handle: nvml.nvmlDeviceGetMemoryInfo(h).used / 2**20  # type: ignore[attr-defined]
                    ),
                )
            )
        return samples

    def close(self) -> None:
        """Shut NVML down (a library that is already half gone is no error here)."""
        with contextlib.suppress(Exception):
            self._nvml.nvmlShutdown()  # type: ignore[attr-defined]


def _try(read) -> float:  # type: ignore[no-untyped-def]
    """``read()`` as a float; NaN when NVML cannot give it (NVMLError_NotSupported …)."""
    try:
        return float(read())
    except Exception:
        return float("nan")


def _normalise_uuid(uuid: str) -> str:
    uuid = str(uuid).strip()
    return uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"


def open_nvml(uuids: Sequence[str] | None = None) -> NvmlReader | None:
    """Open NVML for the GPUs with these UUIDs (all GPUs when None).

    Returns None, with a :class:`RuntimeWarning` saying why, when ``nvidia-ml-py`` is not
    installed, the NVML library or driver is missing, there is no GPU, or a UUID is unknown.
    """
    try:
        import pynvml
    except ImportError:
        warnings.warn(
            "no power log: nvidia-ml-py (pynvml) is not installed; pip install '.[bench]'",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    try:
        pynvml.nvmlInit()
    except Exception as error:  # NVMLError_LibraryNotFound, _DriverNotLoaded, …
        warnings.warn(
            f"no power log: NVML is not available ({error})", RuntimeWarning, stacklevel=2
        )
        return None
    try:
        if uuids is None:
            handles = [
                pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())
            ]
        else:
            handles = [pynvml.nvmlDeviceGetHandleByUUID(_normalise_uuid(u)) for u in uuids]
        if not handles:
            raise RuntimeError("NVML sees no GPU")
        return NvmlReader(pynvml, handles)
    except Exception as error:
        warnings.warn(
            f"no power log: cannot open the GPUs in NVML ({error})", RuntimeWarning, stacklevel=2
        )
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()
        return None


def _timestamp(now: datetime) -> str:
    """``nvidia-smi``'s ``YYYY/MM/DD HH:MM:SS.mmm`` (local time)."""
    return now.strftime("%Y/%m/%d %H:%M:%S.") + f"{now.microsecond // 1000:03d}"


def _cell(value: float, decimals: int) -> str:
    """A CSV value; NaN is written as nvidia-smi writes a missing one, ``[N/A]``."""
    return "[N/A]" if math.isnan(value) else f"{value:.{decimals}f}"


class PowerSampler:
    """Samples a :class:`PowerReader` every ``interval_s`` seconds into a CSV file."""

    def __init__(self, reader: PowerReader, path: Path, *, interval_s: float) -> None:
        """Create the sampler; nothing runs before :meth:`start`."""
        if not interval_s > 0:
            raise ValueError(f"interval_s must be positive, not {interval_s}")
        self.reader = reader
        self.path = Path(path)
        self.interval_s = float(interval_s)
        self.polls = 0
        """Polls written so far."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="trainscale-power", daemon=True)
        self._error: BaseException | None = None

    def start(self) -> None:
        """Write the header and start polling in a daemon thread (first poll at once)."""
        self._file = self.path.open("w", encoding="utf-8", newline="\n")
        self._file.write(CSV_HEADER + "\n")
        self._file.flush()
        self._thread.start()

    def _run(self) -> None:
        start = time.monotonic()
        try:
            while not self._stop.is_set():
                now = datetime.now()
                rows = self.reader.read()
                for s in rows:
                    self._file.write(
                        f"{_timestamp(now)}, {s.index}, {_cell(s.power_w, 2)}, "
                        f"{_cell(s.util_gpu_pct, 0)}, {_cell(s.mem_used_mib, 0)}\n"
                    )
                self._file.flush()
                self.polls += 1
                # Fixed schedule (no drift): the next poll is at start + k * interval.
                wait = start + self.polls * self.interval_s - time.monotonic()
                if wait > 0:
                    self._stop.wait(wait)
        except BaseException as error:
            self._error = error

    def stop(self) -> int:
        """Stop polling, close the file and the reader; return the number of polls.

        Raises
        ------
        RuntimeError
            The sampling thread failed (the message has its error).
        """
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._file.close()
        self.reader.close()
        if self._error is not None:
            raise RuntimeError(f"power sampling failed: {self._error}") from self._error
        return self.polls
