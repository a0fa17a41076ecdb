"""ctxd recall: the recorded turns that answer a question, ranked and packed to a budget."""

import click


@click.command()
@click.argument("query")
@click.option("--budget", type=click.IntRange(min=16), default=None,
              help="Tokens for what is recalled (default: [context] recall_budget, else 1500).")
@click.option("--json", "json_", is_flag=True, help="The hits with their scores, times and kinds.")
def recall(query, budget, json_):
    """Print the turns of this project's conversation that best answer QUERY.

    QUERY is plain text, never search syntax: its words (stop words out, English
    stemmed, Chinese by characters) are matched in any order, whole phrases count
    more, a question comes with its answer. Each turn is shown with its date.
    """
    from ctxd.fastpath.recall_entry import run_recall

    run_recall(query, budget, json_)
