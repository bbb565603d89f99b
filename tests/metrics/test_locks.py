"""LockedState: the lock is dropped from the pickle and made anew, the rest travels."""

import pickle
import threading

import numpy as np

from realitycheck import metrics as M
from realitycheck.analysis import Bootstrap, Measure


class _Counter(M.LockedState):
    def __init__(self) -> None:
        super().__init__()
        self.count = 3


def test_pickle_drops_the_lock_and_the_copy_makes_a_new_unlocked_one():
    original = _Counter()
    original._lock.acquire()  # a held lock must not travel
    data = pickle.dumps(original)
    assert original.__getstate__() == {"count": 3}  # a lock cannot be pickled
    copy = pickle.loads(data)
    assert copy.count == 3
    assert isinstance(copy._lock, type(threading.Lock()))
    assert copy._lock is not original._lock
    assert not copy._lock.locked() and original._lock.locked()
    original._lock.release()


def test_resamples_keep_their_drawn_counts_through_pickle():
    drawn = M.Resamples(40, 30, 5)
    want = list(drawn.counts())  # drawn and kept
    copy = pickle.loads(pickle.dumps(drawn))
    assert copy._kept is not None and copy._lock is not drawn._lock
    assert all(np.array_equal(g, w) for g, w in zip(copy.counts(), want, strict=True))


def test_measure_keeps_its_bootstrap_and_resamples_through_pickle():
    measure = Measure(Bootstrap(n_resamples=50, seed=2))
    kept = measure.resamples(25)
    copy = pickle.loads(pickle.dumps(measure))
    assert copy.bootstrap == measure.bootstrap and list(copy._drawn) == [25]
    assert copy._lock is not measure._lock and not copy._lock.locked()
    got = copy.resamples(25)
    assert got is not kept and got.matches(25, 50, 2)
