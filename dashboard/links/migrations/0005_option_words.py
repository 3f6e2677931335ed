"""The words people read about a link's options (labels and help, in the
API, the form and the admin), now on the model that links/fields.py
declares them from: nothing in the database changes."""

import django.contrib.postgres.fields
import django.core.validators
import links.slugs
import links.validation
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('links', '0001_squashed_0004_catch_up'),
    ]

    operations = [
        migrations.AlterField(
            model_name='link',
            name='crawlable',
            field=models.BooleanField(default=False, help_text="Allowed to search engines in the short domain's robots.txt; other links are not."),
        ),
        migrations.AlterField(
            model_name='link',
            name='expires_at',
            field=models.DateTimeField(blank=True, help_text='From it on the short URL answers 410 Gone.', null=True),
        ),
        migrations.AlterField(
            model_name='link',
            name='forward_query',
            field=models.BooleanField(default=False, help_text="The visitor's query parameters are added to the target.", verbose_name='forward query string'),
        ),
        migrations.AlterField(
            model_name='link',
            name='max_visits',
            field=models.PositiveIntegerField(blank=True, help_text='After this many redirects the short URL answers 410 Gone; empty: no limit.', null=True, validators=[django.core.validators.MinValueValidator(1)], verbose_name='visit limit'),
        ),
        migrations.AlterField(
            model_name='link',
            name='slug',
            field=models.CharField(help_text='The part of the short URL after the domain; generated when left out.', max_length=64, validators=[links.slugs.validate_slug]),
        ),
        migrations.AlterField(
            model_name='link',
            name='tags',
            field=django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=50), blank=True, default=list, help_text="Up to 20 tags of 1 to 50 letters, digits, '.', '-' or '_'.", size=20, validators=[links.validation.validate_tags]),
        ),
        migrations.AlterField(
            model_name='link',
            name='url',
            field=models.TextField(help_text='The absolute http or https URL the short link redirects to.', validators=[links.validation.validate_target_url], verbose_name='target URL'),
        ),
        migrations.AlterField(
            model_name='link',
            name='valid_since',
            field=models.DateTimeField(blank=True, help_text='Before it the short URL answers as if the link did not exist (404).', null=True),
        ),
    ]
