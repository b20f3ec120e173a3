"""Integrations of workpool with frameworks. They sit above the facade (they use
``Workpool``) and nothing in workpool imports them."""
