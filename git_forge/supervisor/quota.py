"""Admission limits: how many processes, how much memory and spool they may hold."""

from __future__ import annotations

import threading

from git_forge.supervisor.lifecycle import ProcessError


class Reservation:
    """What one process holds; released exactly once, however often it is asked."""

    def __init__(self, quota: Quota, memory: int, spool: int) -> None:
        self._quota = quota
        self.memory = memory
        self.spool = spool
        self._released = False
        self._lock = threading.Lock()

    def release(self) -> bool:
        with self._lock:
            if self._released:
                return False
            self._released = True
        self._quota._give_back(self)
        return True


class Quota:
    def __init__(self, max_processes: int, memory_budget: int, spool_budget: int) -> None:
        self.max_processes = max_processes
        self.memory_budget = memory_budget
        self.spool_budget = spool_budget
        self._lock = threading.Lock()
        self.processes = 0
        self.memory = 0
        self.spool = 0

    def reserve(self, memory: int, spool: int) -> Reservation:
        with self._lock:
            if self.processes + 1 > self.max_processes:
                raise ProcessError(
                    "process_quota_exceeded", f"{self.max_processes} processes already running"
                )
            if self.memory + memory > self.memory_budget:
                raise ProcessError("process_quota_exceeded", "the memory budget is spent")
            if self.spool + spool > self.spool_budget:
                raise ProcessError("process_quota_exceeded", "the spool budget is spent")
            self.processes += 1
            self.memory += memory
            self.spool += spool
        return Reservation(self, memory, spool)

    def _give_back(self, reservation: Reservation) -> None:
        with self._lock:
            self.processes -= 1
            self.memory -= reservation.memory
            self.spool -= reservation.spool
