"""Analysis: the Hessian trace, the closed forms, estimator accuracy, the authors' logs, scorecard and claims."""
