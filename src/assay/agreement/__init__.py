"""How far a judge agrees with people: agreement, Cohen's kappa with its interval, confusion."""

from assay.agreement.stats import Agreement, agreement, bootstrap_kappa, cohen_kappa

__all__ = ["Agreement", "agreement", "bootstrap_kappa", "cohen_kappa"]
