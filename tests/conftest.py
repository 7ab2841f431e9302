import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread_and_double_checks():
    torch.set_num_threads(1)
    yield
