"""The reach rule and the quadratic null (CLAIMS.md): a value or scaling claim is decided only by an estimator
whose estimand reaches a known coefficient, and every claim is asked of lambda_Q beside the estimates."""

from __future__ import annotations

from claims_support import linear_evidence

from grokslt.analysis.claims.table import evaluate


def fig1a_rows(tables, estimator="llc"):
    evidence = linear_evidence(1.0)
    rows = evaluate(evidence.summary, {}, {"paper_code": tables(evidence.llc)}, None)
    return [r for r in rows if r["claim"] == "fig1a_linear_p" and r["estimator"] == estimator]


def with_columns(**values):
    return lambda llc: {run: table.assign(**values) for run, table in llc.items()}


def test_a_law_that_holds_is_inconclusive_where_the_estimand_reaches_little_of_the_coefficient():
    [law, null] = fig1a_rows(with_columns(v_reach=0.0006))
    assert law["verdict"] == "inconclusive" and law["value"] > 0.95  # the statistic is kept
    assert "reaches only 0.06% of V's known coefficient" in law["note"]
    assert "the statistic's own verdict: holds" in law["note"]
    assert null["verdict"] == "inconclusive"
    [reaching, _] = fig1a_rows(with_columns(v_reach=0.95))
    assert reaching["verdict"] == "holds" and "reaches 95% or more" in reaching["note"]


def test_no_reach_measured_decides_nothing():
    [law, _] = fig1a_rows(with_columns(v_reach=float("nan")))
    assert law["verdict"] == "inconclusive" and "was not measured" in law["note"]


def test_each_claim_is_asked_of_lambda_q_beside_the_estimates():
    """lambda_Q equal to the estimate gives the same verdicts, and the estimate's row says the claim is about
    curvature; a lambda_Q falling in p fails the law that the estimates hold."""

    def same(llc):
        return {run: table.assign(lambda_q=table["llc"], lambda_q_stderr=0.1) for run, table in llc.items()}

    [law, _] = fig1a_rows(same)
    [twin, _] = fig1a_rows(same, "lambda_Q")
    assert law["verdict"] == twin["verdict"] == "holds"
    assert "gives the same verdict: the claim is about curvature" in law["note"]

    def falling(llc):
        return {run: table.assign(lambda_q=2000 - table["llc"], lambda_q_stderr=0.1) for run, table in llc.items()}

    [law, _] = fig1a_rows(falling)
    [twin, _] = fig1a_rows(falling, "lambda_Q")
    assert twin["verdict"] == "fails" and "lambda_Q at the same settings: fails" in law["note"]


def test_no_lambda_q_rows_where_the_tables_have_none():
    rows = fig1a_rows(lambda llc: llc, "lambda_Q")
    assert rows == []
    assert {r["estimator"] for r in fig1a_rows(lambda llc: llc)} == {"llc"}


def test_every_row_names_its_estimator():
    from grokslt.analysis.claims.evidence import COLUMNS

    evidence = linear_evidence(1.0)
    tables = {run: table.assign(lambda_q=table["llc"], lambda_q_stderr=0.1) for run, table in evidence.llc.items()}
    rows = evaluate(evidence.summary, {}, {"paper_code": tables}, None)
    assert all(set(COLUMNS) <= set(r) for r in rows)
    assert {r["estimator"] for r in rows} == {"llc", "lambda_Q"}
