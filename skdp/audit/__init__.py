"""Statistical privacy audits: lower bounds on the epsilon a mechanism spends.

Run a mechanism or an estimator's fit many times on two neighbouring
datasets, threshold a scalar statistic of the output, and turn the counts
into a Clopper-Pearson lower bound on epsilon (Jagielski, Ullman & Oprea
2020; Nasr et al. 2021). A bound above the claimed epsilon is a bug; a bound
below it is evidence, not proof, of privacy.
"""

from ._audit import AuditResult, audit_epsilon, audit_estimator, audit_scores

__all__ = ["AuditResult", "audit_epsilon", "audit_estimator", "audit_scores"]
