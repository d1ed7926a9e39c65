"""Answers: select and pack evidence, prompt the model, check every claim and citation, keep the answer."""
