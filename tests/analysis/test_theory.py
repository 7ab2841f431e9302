import pytest
import torch

from grokslt.analysis import theory
from grokslt.analysis.theory import (
    SUBABUNDANT,
    SUPERABUNDANT,
    active_atom_rank,
    data_jacobian_rank,
    effective_atoms,
    generic_llc,
    lazy_bounds,
    lazy_feature_rank,
    lazy_llc,
    ntk_llc,
    parameter_map_rank,
    random_parameters,
    single_output_llc,
    single_output_rank,
    stage2_llc,
)
from grokslt.training.model import forward_pairs


def test_generic_llc_of_the_baseline_by_hand():
    result = generic_llc(106, 53, 1024)
    assert result.value == 1024 * (3 * 53 - 1) / 2 == 80896
    assert result.regime == SUBABUNDANT
    assert stage2_llc(53, 1024) == 80896
    assert stage2_llc(53, 1024, K_eff=100) == 100 * 158 / 2


def test_regime_boundary():
    # d = 4, p = 2: ambient p d (d + 1) / 2 = 20; each atom brings d + p - 1 = 5 directions
    assert generic_llc(4, 2, 3) == theory.GenericLLC(7.5, SUBABUNDANT, 15, 20)
    assert generic_llc(4, 2, 4) == theory.GenericLLC(10.0, SUPERABUNDANT, 20, 20)  # 20 >= 20
    assert generic_llc(4, 2, 9).value == 2 * 4 * 5 / 4


def test_single_output_theorems_by_hand():
    assert single_output_llc(4, 2) == 5  # the paper's worked example after Theorem G.2
    assert single_output_llc(3, 3) == single_output_llc(3, 7) == (4 * 5) / 4
    assert single_output_llc(6, 1) == (1 * 12 / 2 + 2) / 2


def test_lazy_and_ntk_formulas():
    assert lazy_bounds(53, 1024) == (53 * 105 / 2, 53 * 1024 / 2)
    assert lazy_llc(5, 30, 24) == 5 * 24 / 2
    assert lazy_llc(5, 10, 24) == 25
    assert ntk_llc(7) == 3.5
    with pytest.raises(ValueError, match="K = 9: Corollary 5.3 needs K > 2p - 1 = 9"):
        lazy_bounds(5, 9)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: generic_llc(0, 5, 3), "d = 0: expected a positive integer"),
        (lambda: generic_llc(10, -1, 3), "p = -1"),
        (lambda: stage2_llc(5, 3, K_eff=4), "K_eff = 4: expected at most K = 3"),
        (lambda: stage2_llc(3, 20), "superabundant"),
        (lambda: single_output_llc(3, 0), "K = 0"),
        (lambda: ntk_llc(-1), "rank = -1"),
        (lambda: effective_atoms(torch.ones(2, 2), torch.ones(2, 2), mass=0), "mass = 0"),
    ],
)
def test_bad_inputs_are_rejected(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_rank_of_a_single_atom_by_hand():
    """One neuron: Phi = v (x) w w^T; directions: p for v, d for w, minus the scaling v -> c v,
    w -> w / sqrt(c): rank d + p - 1."""
    W, V = torch.tensor([[1.0], [2.0], [0.5]]), torch.tensor([[1.0], [-1.0]])
    assert parameter_map_rank(W, V) == 3 + 2 - 1


@pytest.mark.parametrize("p, K", [(3, 2), (5, 8), (5, 20), (7, 5)])
def test_generic_parameter_map_rank_is_the_expected_secant_dimension(p, K):
    W, V = random_parameters(p, K, torch.Generator().manual_seed(p * 100 + K))
    assert parameter_map_rank(W, V) == generic_llc(2 * p, p, K).expected_rank


def test_a_defective_architecture_is_found_at_every_seed():
    """(d, p, K) = (6, 3, 8): the expected secant dimension is the ambient 63, the rank is 62."""
    ranks = {parameter_map_rank(*random_parameters(3, 8, torch.Generator().manual_seed(s))) for s in range(3)}
    assert ranks == {62}


@pytest.mark.parametrize("p, K", [(3, 4), (5, 6)])
def test_gram_rank_equals_the_explicit_jacobian_rank(p, K):
    W, V = random_parameters(p, K, torch.Generator().manual_seed(1))
    assert active_atom_rank(W, V, mass=1.0) == (K, parameter_map_rank(W, V))


def test_one_hot_data_cannot_see_one_direction_per_neuron():
    """W^T x = W[a] + W[p + b] is unchanged by adding t to W's first p rows and subtracting it from the
    last p: in the subabundant regime the data Jacobian has rank K (3p - 2), not K (3p - 1)."""
    p, K = 7, 5
    W, V = random_parameters(p, K, torch.Generator().manual_seed(0))
    a, b = torch.arange(p).repeat_interleave(p), torch.arange(p).repeat(p)
    assert data_jacobian_rank(W, V, a, b) == K * (3 * p - 2)
    shift = torch.cat([torch.ones(p, K), -torch.ones(p, K)]).double()
    assert torch.allclose(forward_pairs(W + 0.3 * shift, V, a, b), forward_pairs(W, V, a, b))


def test_lazy_feature_rank_saturates_at_the_centred_input_count():
    p = 5
    a, b = torch.arange(p).repeat_interleave(p), torch.arange(p).repeat(p)
    generator = torch.Generator().manual_seed(0)
    assert lazy_feature_rank(random_parameters(p, 3, generator)[0], a, b) == 3
    assert lazy_feature_rank(random_parameters(p, 60, generator)[0], a, b) == p * p - 1


@pytest.mark.parametrize("d, K", [(3, 1), (3, 2), (4, 3), (4, 4), (5, 7)])
def test_single_output_rank_matches_theorems_g1_g2(d, K):
    assert single_output_rank(d, K, torch.Generator().manual_seed(d + K)) / 2 == single_output_llc(d, K)


def test_effective_atoms_counts_the_atoms_that_carry_the_mass():
    W = torch.tensor([[3.0, 1.0, 0.01], [0.0, 0.0, 0.0]])
    V = torch.tensor([[1.0, 1.0, 1.0]])
    # atom norms 9, 1, 1e-4
    assert effective_atoms(W, V, mass=0.85) == 1
    assert effective_atoms(W, V, mass=0.99) == 2
    assert effective_atoms(W, V, mass=1.0) == 3
