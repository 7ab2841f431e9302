import pytest
import torch

from grokslt.training.data import authors_pair_order, make_dataset, one_hot_inputs


def test_authors_split_sizes_match_their_logs():
    data = make_dataset(53, 0.4, 0)
    assert data.n_train == 1123
    assert len(data.val_idx) == 2809 - 1123


@pytest.mark.parametrize("split", ["authors", "numpy"])
def test_split_is_a_partition_and_targets_are_sums(split):
    data = make_dataset(7, 0.5, 3, split)
    both = torch.cat([data.train_idx, data.val_idx]).sort().values
    assert torch.equal(both, torch.arange(49))
    a, b, c = data.subset("train")
    assert torch.equal(c, (a + b) % 7)
    assert len({(int(x), int(y)) for x, y in data.pairs}) == 49


def test_split_is_seeded():
    assert torch.equal(make_dataset(11, 0.3, 1).train_idx, make_dataset(11, 0.3, 1).train_idx)
    assert not torch.equal(make_dataset(11, 0.3, 1).train_idx, make_dataset(11, 0.3, 2).train_idx)


def test_authors_order_is_set_iteration_order():
    assert authors_pair_order(5) == list({(a, b) for a in range(5) for b in range(5)})


def test_one_hot_inputs():
    x = one_hot_inputs(torch.tensor([1]), torch.tensor([2]), 3)
    assert x.tolist() == [[0, 1, 0, 0, 0, 1]]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"p": 4}, "p = 4: expected a prime"),
        ({"p": 2}, "p = 2: expected an integer >= 3"),
        ({"p": 5.0}, "p = 5.0"),
        ({"train_frac": 0}, "train_frac = 0: expected a number in (0, 1)"),
        ({"train_frac": 1.0}, "train_frac = 1.0"),
        ({"train_frac": "0.4"}, "train_frac = '0.4'"),
        ({"seed": -1}, "seed = -1: expected an integer in "),
        ({"seed": 1.5}, "seed = 1.5"),
        ({"split": "random"}, "split = 'random'"),
        ({"p": 3, "train_frac": 0.05}, "gives 0 of 9 pairs"),
    ],
)
def test_bad_inputs_are_named(kwargs, message):
    settings = {"p": 5, "train_frac": 0.4, "seed": 0, "split": "authors"} | kwargs
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_dataset(**settings)


@pytest.mark.parametrize(
    "task, rule",
    [
        ("add", lambda a, b: a + b),
        ("sub", lambda a, b: a - b),
        ("mul", lambda a, b: a * b),
        ("x2y2", lambda a, b: a * a + b * b),
    ],
)
def test_each_task_labels_every_pair_and_keeps_the_split(task, rule):
    data = make_dataset(7, 0.5, 1, task=task)
    for (a, b), c in zip(data.pairs.tolist(), data.targets.tolist(), strict=True):
        assert c == rule(a, b) % 7
    assert torch.equal(data.train_idx, make_dataset(7, 0.5, 1).train_idx)
